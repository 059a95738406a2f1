import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRuleSeries } from './rule-series.js';

describe('createRuleSeries', () => {
  it('counts each outcome per second', () => {
    const s = createRuleSeries(300);
    s.add('ok', 10_000);
    s.add('ok', 10_999);
    s.add('over_limit', 10_500);
    s.add('near_limit', 11_000);
    s.add('shadow', 12_000);
    assert.deepEqual(s.read(10, 12), {
      ok: [2, 0, 0],
      near_limit: [0, 1, 0],
      over_limit: [1, 0, 0],
      shadow: [0, 0, 1],
    });
    assert.deepEqual(s.sum(0, 12), { ok: 2, near_limit: 1, over_limit: 1, shadow: 1 });
    assert.equal(s.lastS, 12);
  });

  it('forgets seconds that fell out of the window, and reads them as 0', () => {
    const s = createRuleSeries(5);
    s.add('ok', 1000);
    s.add('ok', 6000); // lands on second 1's slot
    assert.deepEqual(s.read(1, 1).ok, [0]);
    assert.deepEqual(s.read(6, 6).ok, [1]);
    assert.deepEqual(s.sum(0, 6).ok, 1);
  });

  it('ignores decisions older than the window', () => {
    const s = createRuleSeries(5);
    s.add('ok', 100_000);
    s.add('ok', 1000);
    assert.deepEqual(s.sum(0, 100).ok, 1);
    assert.deepEqual(s.read(100, 100).ok, [1]);
  });

  it('stays a fixed size however long it runs', () => {
    const s = createRuleSeries(300);
    for (let t = 0; t < 3_600_000; t += 250) s.add('ok', t);
    const counts = s.read(3300, 3599).ok;
    assert.equal(counts.length, 300);
    assert.ok(counts.every((c) => c === 4));
  });
});
