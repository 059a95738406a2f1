import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAccessList } from './access-list.js';

describe('createAccessList', () => {
  it('matches addresses, blocks of both families and keys', () => {
    const list = createAccessList(['203.0.113.7', '10.0.0.0/8', '2001:db8::/32', 'api-key-123']);
    assert.equal(list.matchesIp('203.0.113.7'), true);
    assert.equal(list.matchesIp('::ffff:10.200.0.1'), true);
    assert.equal(list.matchesIp('2001:db8:ffff::9'), true);
    assert.equal(list.matchesIp('192.0.2.1'), false);
    assert.equal(list.matchesIp('not an ip'), false);
    assert.equal(list.matchesKey('api-key-123'), true);
    assert.equal(list.matchesKey('10.0.0.0/8'), false);
  });

  it('keeps an address listed while another spelling of it remains', () => {
    const list = createAccessList(['10.0.0.1', '::ffff:10.0.0.1']);
    assert.equal(list.delete('10.0.0.1'), true);
    assert.equal(list.matchesIp('10.0.0.1'), true);
    assert.equal(list.delete('::ffff:10.0.0.1'), true);
    assert.equal(list.matchesIp('10.0.0.1'), false);
    assert.equal(list.hasIps, false);
    assert.equal(list.delete('::ffff:10.0.0.1'), false);
  });

  it('holds 100,000 entries and adds or deletes one without rebuilding', () => {
    const entries: string[] = [];
    for (let i = 0; i < 50_000; i++) entries.push(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, `key-${i}`);
    const list = createAccessList(entries);
    assert.equal(list.entries().length, 100_000);
    assert.equal(list.matchesIp('10.0.195.79'), true);
    assert.equal(list.matchesIp('10.0.195.80'), false);
    assert.equal(list.matchesKey('key-49999'), true);
    list.add('10.0.195.80/31');
    assert.equal(list.matchesIp('10.0.195.81'), true);
    assert.equal(list.delete('10.0.195.79'), true);
    assert.equal(list.matchesIp('10.0.195.79'), false);
    assert.equal(list.matchesIp('10.0.195.78'), true);
  });
});
