import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ALGORITHMS, resolvePolicy } from '../../core/policy.js';
import { blockKey, escapeKey, leaseKey, shortPolicyId, slotOf, stateKey, tagOf, validatePrefix } from './keys.js';

describe('redis keys', () => {
  it('escapes braces and the escape character injectively', () => {
    const keys = ['a', '{a}', 'a}', '{a', '\\[a', '\\', '\\\\', '}{', 'a:b', 'a!b', 'a#', '', '\\]'];
    const escaped = keys.map(escapeKey);
    assert.equal(new Set(escaped).size, keys.length);
    for (const e of escaped) assert.ok(!e.includes('{') && !e.includes('}'));
    assert.equal(escapeKey('plain:key'), 'plain:key');
  });

  it('keeps every key of one user key in its hash tag, and kinds apart', () => {
    const tag = tagOf('sluice:', 'user:{42}');
    assert.equal(tag, 'sluice:{user:\\[42\\]}');
    const keys = [stateKey(tag, 'fw1/1000'), blockKey(tag, 'fw1/1000'), leaseKey(tag)];
    assert.equal(new Set(keys.map(slotOf)).size, 1);
    assert.equal(new Set(keys).size, 3);
    // A key that looks like another key's suffix cannot reach it.
    assert.notEqual(stateKey(tagOf('p:', 'a}:x'), 'y'), stateKey(tagOf('p:', 'a'), 'x}:y'));
  });

  it('shortens policy ids injectively', () => {
    assert.equal(shortPolicyId('fw100/86400000'), 'f2s.1d');
    assert.equal(shortPolicyId('tb10/1000b20'), 'ba.1sbk');
    assert.equal(shortPolicyId('gc7/1500'), 'g7.1500');
    assert.equal(shortPolicyId('x~fw1/1000'), 'x~fw1/1000', 'any other id is kept whole');
    const ids = new Set<string>();
    const shorts = new Set<string>();
    for (const algorithm of ALGORITHMS) {
      for (const limit of [0, 1, 2, 9, 10, 35, 36, 100, 1000, 123_456]) {
        for (const period of [1, 999, 1000, 1500, 60_000, 90_000, 3_600_000, 86_400_000, 7 * 86_400_000]) {
          for (const burst of [undefined, limit + 1, limit * 3 + 7]) {
            if (
              algorithm !== 'token-bucket' &&
              algorithm !== 'leaky-bucket' &&
              algorithm !== 'gcra' &&
              burst !== undefined
            )
              continue;
            if (limit === 0 && burst !== undefined) continue;
            let id: string;
            try {
              id = resolvePolicy({ algorithm, limit, period, ...(burst === undefined ? {} : { burst }) }).id;
            } catch {
              continue; // too large to count exactly
            }
            const short = shortPolicyId(id);
            assert.ok(!short.includes('/') && short.length < id.length, `${id} → ${short}`);
            ids.add(id);
            shorts.add(short);
          }
        }
      }
    }
    assert.equal(shorts.size, ids.size, 'no two policies share a key id');
  });

  it('computes Redis Cluster slots', () => {
    assert.equal(slotOf('foo'), 12182);
    assert.equal(slotOf('{user1000}.following'), slotOf('{user1000}.followers'));
    assert.equal(slotOf('a{}b'), slotOf('a{}b'));
    assert.notEqual(slotOf('{}a'), slotOf('{}b'), 'an empty tag hashes the whole key');
  });

  it('refuses a prefix with braces', () => {
    assert.throws(() => validatePrefix('a{b'), { code: 'ERR_SLUICE_INVALID_OPTION' });
    assert.equal(validatePrefix(''), '');
  });
});
