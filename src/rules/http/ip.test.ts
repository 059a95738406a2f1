import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatIp, maskIp, parseIp } from './ip.js';

const canonical = (text: string) => {
  const ip = parseIp(text);
  return ip && formatIp(ip);
};

describe('ip', () => {
  it('parses and prints IPv4, and IPv6 in RFC 5952 form', () => {
    assert.equal(canonical('10.0.0.1'), '10.0.0.1');
    assert.equal(canonical('2001:0DB8:0000:0000:0000:0000:0000:0001'), '2001:db8::1');
    assert.equal(canonical('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
    assert.equal(canonical('::'), '::');
    assert.equal(canonical('::1'), '::1');
    assert.equal(canonical('fe80::1%eth0'), 'fe80::1');
    assert.equal(canonical('[2001:db8::5]'), '2001:db8::5');
    assert.equal(canonical('2001:db8:1:0:1:1:1:1'), '2001:db8:1:0:1:1:1:1');
  });

  it('treats IPv4-mapped IPv6 as IPv4', () => {
    assert.equal(canonical('::ffff:192.0.2.7'), '192.0.2.7');
    assert.equal(parseIp('::ffff:c000:0207')?.version, 4);
  });

  it('rejects what is not an address', () => {
    for (const bad of ['', 'localhost', '1.2.3', '1.2.3.256', '1:2:3:4:5:6:7:8:9', '1::2::3', 'g::1', '01.2.3.4.5']) {
      assert.equal(parseIp(bad), undefined, bad);
    }
  });

  it('masks to a prefix length', () => {
    const v4 = parseIp('192.168.37.201');
    const v6 = parseIp('2001:db8:abcd:12ff::1');
    assert.ok(v4 && v6);
    assert.equal(formatIp(maskIp(v4, 20)), '192.168.32.0');
    assert.equal(formatIp(maskIp(v4, 0)), '0.0.0.0');
    assert.equal(formatIp(maskIp(v4, 32)), '192.168.37.201');
    assert.equal(formatIp(maskIp(v6, 56)), '2001:db8:abcd:1200::');
    assert.equal(formatIp(maskIp(v6, 128)), '2001:db8:abcd:12ff::1');
  });
});
