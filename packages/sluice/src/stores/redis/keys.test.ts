import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blockKey, escapeKey, leaseKey, slotOf, stateKey, tagOf, validatePrefix } from './keys.js';

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
