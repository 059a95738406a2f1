import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isSluiceError } from 'sluice';
import { createAccessLists, MAX_ACCESS_ENTRIES } from './access-lists.js';

describe('access lists', () => {
  it('matches exact values, addresses and CIDR blocks, scoped by key and domain; deny wins', () => {
    const lists = createAccessLists();
    lists.add('deny', { value: '10.0.0.0/8' });
    lists.add('allow', { value: '10.1.2.3' });
    lists.add('deny', { value: 'leaked', key: 'api_key' });
    lists.add('allow', { value: '2001:db8::/32', domain: 'edge' });
    lists.add('allow', { value: 'partner', key: 'api_key', domain: 'edge' });
    assert.equal(lists.match('any', 'remote_address', '10.1.2.3'), 'deny');
    assert.equal(lists.match('any', 'remote_address', '::ffff:10.9.9.9'), 'deny');
    assert.equal(lists.match('any', 'remote_address', '11.0.0.1'), undefined);
    assert.equal(lists.match('any', 'api_key', 'leaked'), 'deny');
    assert.equal(lists.match('any', 'user', 'leaked'), undefined);
    assert.equal(lists.match('edge', 'remote_address', '2001:db8:1::1'), 'allow');
    assert.equal(lists.match('other', 'remote_address', '2001:db8:1::1'), undefined);
    assert.equal(lists.match('edge', 'api_key', 'partner'), 'allow');
    assert.equal(lists.match('edge', 'user', 'partner'), undefined);
    assert.equal(lists.match('other', 'api_key', 'partner'), undefined);
    // An address entry also matches its literal text, and a host:port value is not an address.
    assert.equal(lists.match('any', 'key', '10.1.2.3'), 'deny');
    assert.equal(lists.match('any', 'remote_address', '10.1.2.3:80'), undefined);
  });

  it('removes one entry of several with the same value, keeping the others in force', () => {
    const lists = createAccessLists();
    const a = lists.add('deny', { value: '192.0.2.0/24', domain: 'a' });
    const b = lists.add('deny', { value: '192.0.2.0/24', domain: 'b' });
    const c = lists.add('deny', { value: '192.0.2.0/24', domain: 'b' });
    assert.equal(lists.remove('deny', b.id), true);
    assert.equal(lists.match('b', 'remote_address', '192.0.2.9'), 'deny');
    assert.equal(lists.remove('deny', c.id), true);
    assert.equal(lists.match('b', 'remote_address', '192.0.2.9'), undefined);
    assert.equal(lists.match('a', 'remote_address', '192.0.2.9'), 'deny');
    assert.equal(lists.remove('deny', c.id), false);
    assert.equal(lists.remove('allow', a.id), false);
    assert.deepEqual(
      lists.list('deny').map((e) => e.id),
      [a.id],
    );
  });

  it('one value listed for many domains: each scope matches until its own entry is removed', () => {
    const lists = createAccessLists();
    const ids = Array.from({ length: 20 }, (_, i) => lists.add('deny', { value: 'shared', domain: `d${i}` }).id);
    const addressIds = Array.from(
      { length: 20 },
      (_, i) => lists.add('deny', { value: '192.0.2.0/24', domain: `d${i}`, key: 'ip' }).id,
    );
    for (let i = 0; i < 20; i++) {
      assert.equal(lists.match(`d${i}`, 'any', 'shared'), 'deny');
      assert.equal(lists.match(`d${i}`, 'ip', '192.0.2.77'), 'deny');
      assert.equal(lists.match(`d${i}`, 'other', '192.0.2.77'), undefined);
    }
    assert.equal(lists.match('d20', 'any', 'shared'), undefined);
    for (let i = 0; i < 20; i += 2) {
      lists.remove('deny', ids[i] as string);
      lists.remove('deny', addressIds[i] as string);
    }
    for (let i = 0; i < 20; i++) {
      const want = i % 2 === 0 ? undefined : 'deny';
      assert.equal(lists.match(`d${i}`, 'any', 'shared'), want);
      assert.equal(lists.match(`d${i}`, 'ip', '192.0.2.77'), want);
    }
    lists.add('allow', { value: 'shared' });
    assert.equal(lists.match('d0', 'any', 'shared'), 'allow');
    assert.equal(lists.match('d1', 'any', 'shared'), 'deny');
  });

  it('holds 100,000 entries, matches each kind among them, and refuses one more with a code', () => {
    const lists = createAccessLists();
    const half = MAX_ACCESS_ENTRIES / 2;
    for (let i = 0; i < half; i++) {
      lists.add('deny', { value: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` });
      lists.add('allow', { value: `key-${i}`, key: 'api_key' });
    }
    assert.equal(lists.size, MAX_ACCESS_ENTRIES);
    assert.equal(lists.match('d', 'remote_address', '10.0.195.79'), 'deny');
    assert.equal(lists.match('d', 'remote_address', '10.0.195.80'), undefined);
    assert.equal(lists.match('d', 'api_key', 'key-49999'), 'allow');
    assert.equal(lists.match('d', 'api_key', 'key-50000'), undefined);
    assert.throws(
      () => lists.add('deny', { value: '192.0.2.1' }),
      (e) => isSluiceError(e) && e.code === 'ERR_SLUICE_LIST_FULL',
    );
    const first = lists.list('deny')[0];
    assert.ok(first);
    assert.equal(lists.remove('deny', first.id), true);
    assert.equal(lists.match('d', 'remote_address', '10.0.0.0'), undefined);
    assert.equal(lists.match('d', 'remote_address', '10.0.0.1'), 'deny');
    assert.equal(lists.add('deny', { value: '192.0.2.1' }).list, 'deny');
  });
});
