import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isSluiceError } from '../core/errors.js';
import { type ClientIpOptions, createClientIpResolver } from './client-ip.js';
import { parseForwarded, parseXForwardedFor } from './forwarded.js';

type Req = Record<string, string>;
const header = (req: Req, name: string) => req[name];

function client(options: ClientIpOptions, peer: string | undefined, headers: Req = {}) {
  return createClientIpResolver(options).clientIp(peer, headers, header);
}

describe('client address', () => {
  it('is the TCP peer unless the peer is a trusted proxy', () => {
    const spoof = { 'x-forwarded-for': '198.51.100.1' };
    assert.equal(client({}, '203.0.113.5', spoof), '203.0.113.5');
    assert.equal(client({}, '::ffff:203.0.113.5', spoof), '203.0.113.5', 'IPv4-mapped peers are written as IPv4');
    assert.equal(client({ trustProxy: ['10.0.0.0/8'] }, '203.0.113.5', spoof), '203.0.113.5');
    assert.equal(client({ trustProxy: ['10.0.0.0/8'] }, '10.0.0.2', spoof), '198.51.100.1');
    assert.equal(client({ trustProxy: ['10.0.0.0/8'] }, '::ffff:10.0.0.2', spoof), '198.51.100.1');
    assert.equal(client({ trustProxy: ['::ffff:10.0.0.0/104'] }, '10.0.0.2', spoof), '198.51.100.1');
    assert.equal(client({}, undefined), '');
  });

  it('takes the right-most hop that is not a trusted proxy', () => {
    const options = { trustProxy: ['loopback', '10.0.0.0/8'] };
    const xff = (v: string) => ({ 'x-forwarded-for': v });
    assert.equal(client(options, '127.0.0.1', xff('1.1.1.1, 2.2.2.2, 10.0.0.1')), '2.2.2.2');
    assert.equal(client(options, '127.0.0.1', xff('1.1.1.1,2.2.2.2')), '2.2.2.2');
    assert.equal(client(options, '127.0.0.1', xff('10.0.0.3, 10.0.0.1')), '10.0.0.3', 'all trusted: the left-most');
    assert.equal(client(options, '127.0.0.1', xff('1.1.1.1, unknown, 10.0.0.1')), '10.0.0.1', 'garbage stops the walk');
    assert.equal(client(options, '127.0.0.1', xff('')), '127.0.0.1');
    assert.equal(client(options, '127.0.0.1', xff('[2001:db8::1]:80')), '2001:db8::1');
    assert.equal(client(options, '127.0.0.1', xff('2001:DB8::1')), '2001:db8::1');
    assert.equal(client(options, '127.0.0.1', xff('203.0.113.9:1234')), '203.0.113.9');
    assert.equal(client(options, '127.0.0.1'), '127.0.0.1', 'no header: the proxy itself');
  });

  it('reads Forwarded instead when told to, and only then', () => {
    const options: ClientIpOptions = { trustProxy: '127.0.0.1, ::1', proxyHeader: 'forwarded' };
    const both = { forwarded: 'for=192.0.2.60;proto=http;by=203.0.113.43', 'x-forwarded-for': '1.1.1.1' };
    assert.equal(client(options, '::1', both), '192.0.2.60');
    assert.equal(client({ trustProxy: '127.0.0.1' }, '127.0.0.1', both), '1.1.1.1');
    const chain = { forwarded: 'for="_gazonk", For="[2001:db8:cafe::17]:4711", for=127.0.0.1' };
    assert.equal(client(options, '127.0.0.1', chain), '2001:db8:cafe::17');
    assert.equal(client(options, '127.0.0.1', { forwarded: 'for=unknown' }), '127.0.0.1');
    assert.equal(client(options, '127.0.0.1', { forwarded: 'proto=https' }), '127.0.0.1', 'no for=: unknown hop');
    // A client's unclosed quote must not swallow the element our proxy appended: it would be keyed as the proxy.
    for (const sent of ['for="x', 'for="x\\"', 'for=a;proto="http'])
      assert.equal(client(options, '127.0.0.1', { forwarded: `${sent}, for=203.0.113.5` }), '203.0.113.5', sent);
    assert.equal(client(options, '127.0.0.1', { forwarded: 'for="x, for="[2001:db8::5]"' }), '2001:db8::5');
  });

  it('parses the hop lists', () => {
    assert.deepEqual(parseXForwardedFor(' a , b,,c '), ['a', 'b', 'c']);
    assert.deepEqual(parseForwarded('for=192.0.2.43, for=198.51.100.17'), ['192.0.2.43', '198.51.100.17']);
    assert.deepEqual(parseForwarded('for="[2001:db8::1]";by=x,for="a\\"b"'), ['[2001:db8::1]', 'a"b']);
    // Every comma ends an element, even inside quotes (no node holds one): an unclosed quote stays in its element.
    assert.deepEqual(parseForwarded('for="x, for=203.0.113.5'), ['x', '203.0.113.5']);
    assert.deepEqual(parseForwarded('by=x'), ['']);
  });

  it('keys IPv6 clients by their /56 unless told otherwise', () => {
    const key = (ip: string, options: ClientIpOptions = {}) => createClientIpResolver(options).ipKey(ip);
    assert.equal(key('203.0.113.5'), '203.0.113.5');
    assert.equal(key('2001:db8:aaaa:bb12::1'), '2001:db8:aaaa:bb00::/56');
    assert.equal(key('2001:db8:aaaa:bbff:ffff::9'), '2001:db8:aaaa:bb00::/56');
    assert.notEqual(key('2001:db8:aaaa:bc00::1'), key('2001:db8:aaaa:bb00::1'));
    assert.equal(key('2001:db8:aaaa:bb12::1', { ipv6Subnet: 64 }), '2001:db8:aaaa:bb12::/64');
    assert.equal(key('2001:db8:aaaa:bb12::1', { ipv6Subnet: false }), '2001:db8:aaaa:bb12::1');
    assert.equal(key('::ffff:203.0.113.5'), '203.0.113.5');
  });

  it('rejects bad options with the option named', () => {
    const bad: [ClientIpOptions, string][] = [
      [{ trustProxy: ['10.0.0.0/33'] }, 'trustProxy[0]'],
      [{ trustProxy: ['loopback', 'proxy.internal'] }, 'trustProxy[1]'],
      [{ trustProxy: 42 as unknown as string }, 'trustProxy'],
      [{ proxyHeader: 'x-real-ip' as 'forwarded' }, 'proxyHeader'],
      [{ ipv6Subnet: 0 }, 'ipv6Subnet'],
      [{ ipv6Subnet: 129 }, 'ipv6Subnet'],
    ];
    for (const [options, option] of bad) {
      assert.throws(
        () => createClientIpResolver(options),
        (e: unknown) => isSluiceError(e, 'ERR_SLUICE_INVALID_OPTION') && e.option === option,
        option,
      );
    }
  });
});
