import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cidrContains, formatIp, maskIp, maskToPrefix, parseCidr, parseIp } from './ip.js';

const canon = (text: string) => {
  const bytes = parseIp(text);
  return bytes === undefined ? undefined : formatIp(bytes);
};

describe('IP addresses', () => {
  it('parses IPv4, IPv6 and what proxies wrap around them, writing them canonically', () => {
    const cases: [string, string][] = [
      ['192.0.2.1', '192.0.2.1'],
      ['0.0.0.0', '0.0.0.0'],
      ['255.255.255.255', '255.255.255.255'],
      ['192.0.2.1:8080', '192.0.2.1'],
      ['::ffff:192.0.2.1', '192.0.2.1'],
      ['::FFFF:c000:0201', '192.0.2.1'],
      ['::1', '::1'],
      ['::', '::'],
      ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
      ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
      ['2001:0db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'],
      ['2001:db8::0:1:0:0:1', '2001:db8::1:0:0:1'],
      ['2001:db8:1:1:1:1:1:0', '2001:db8:1:1:1:1:1:0'],
      ['fe80::1%eth0', 'fe80::1'],
      ['[2001:db8::17]', '2001:db8::17'],
      ['[2001:db8::17]:4711', '2001:db8::17'],
      ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
      ['::2:3:4:5:6:7:8', '0:2:3:4:5:6:7:8'],
      ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
    ];
    for (const [input, output] of cases) assert.equal(canon(input), output, input);
  });

  it('refuses what is not an address', () => {
    for (const bad of [
      '',
      'unknown',
      '_hidden',
      '256.1.1.1',
      '1.2.3',
      '1.2.3.4.5',
      '01.2.3.4',
      '1.2.3.4:port',
      '1.2.3.-4',
      '::1::',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7',
      '12345::',
      'g::1',
      '[::1',
      '[::1]x',
      '1:2:3:4:5:6:7:8::',
      ' 1.2.3.4',
    ]) {
      assert.equal(parseIp(bad), undefined, bad);
    }
  });

  it('CIDR blocks over both families; IPv4 blocks match IPv4-mapped IPv6', () => {
    const contains = (block: string, ip: string) => {
      const cidr = parseCidr(block);
      const bytes = parseIp(ip);
      assert.ok(cidr && bytes, `${block} ${ip}`);
      return cidrContains(cidr, bytes);
    };
    assert.equal(contains('10.0.0.0/8', '10.255.1.2'), true);
    assert.equal(contains('10.0.0.0/8', '11.0.0.1'), false);
    assert.equal(contains('10.0.0.0/8', '::ffff:10.1.2.3'), true);
    assert.equal(contains('172.16.0.0/12', '172.31.255.255'), true);
    assert.equal(contains('172.16.0.0/12', '172.32.0.0'), false);
    assert.equal(contains('0.0.0.0/0', '8.8.8.8'), true);
    assert.equal(contains('0.0.0.0/0', '2001:db8::1'), false, 'an IPv4 block holds no IPv6 address');
    assert.equal(contains('::/0', '2001:db8::1'), true);
    assert.equal(contains('2001:db8::/32', '2001:db8:ffff::1'), true);
    assert.equal(contains('2001:db8::/32', '2001:db9::1'), false);
    assert.equal(contains('fe80::/10', 'febf::1'), true);
    assert.equal(contains('fe80::/10', 'fec0::1'), false);
    assert.equal(contains('192.0.2.7', '192.0.2.7'), true, 'a bare address is a block of one');
    assert.equal(contains('192.0.2.7', '192.0.2.8'), false);
    assert.equal(contains('10.1.2.3/8', '10.9.9.9'), true, 'host bits of the block are ignored');
    for (const bad of ['10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/x', 'host/8']) {
      assert.equal(parseCidr(bad), undefined, bad);
    }
  });

  it('masks addresses', () => {
    const masked = (ip: string, bits: number) => formatIp(maskIp(parseIp(ip) as Uint8Array, bits));
    assert.equal(masked('2001:db8:aaaa:bbcc:1:2:3:4', 56), '2001:db8:aaaa:bb00::');
    assert.equal(masked('2001:db8:aaaa:bbcc:1:2:3:4', 64), '2001:db8:aaaa:bbcc::');
    assert.equal(masked('2001:db8:aaaa:bbcc:1:2:3:4', 128), '2001:db8:aaaa:bbcc:1:2:3:4');
    assert.equal(masked('2001:db8:aaaa:bbcc:1:2:3:4', 0), '::');
  });

  it('prints IPv6 in RFC 5952 form and masks to a prefix counted in the address family', () => {
    const canonical = (text: string) => {
      const ip = parseIp(text);
      return ip && formatIp(ip);
    };
    assert.equal(canonical('2001:0DB8:0000:0000:0000:0000:0000:0001'), '2001:db8::1');
    assert.equal(canonical('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
    assert.equal(canonical('2001:db8:1:0:1:1:1:1'), '2001:db8:1:0:1:1:1:1');
    assert.equal(canonical('fe80::1%eth0'), 'fe80::1');
    const v4 = parseIp('192.168.37.201');
    const v6 = parseIp('2001:db8:abcd:12ff::1');
    assert.ok(v4 && v6);
    assert.equal(formatIp(maskToPrefix(v4, 20)), '192.168.32.0');
    assert.equal(formatIp(maskToPrefix(v4, 0)), '0.0.0.0');
    assert.equal(formatIp(maskToPrefix(v4, 32)), '192.168.37.201');
    assert.equal(formatIp(maskToPrefix(v6, 56)), '2001:db8:abcd:1200::');
    assert.equal(formatIp(maskToPrefix(v6, 128)), '2001:db8:abcd:12ff::1');
  });
});
