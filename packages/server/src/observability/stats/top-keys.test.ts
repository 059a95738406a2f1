import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DecisionEvent, DecisionOutcome } from '../decision-events.js';
import { createTopKeys } from './top-keys.js';

function event(key: string, remaining: number, atMs: number, extra: Partial<DecisionEvent> = {}): DecisionEvent {
  const outcome: DecisionOutcome = extra.outcome ?? (remaining < 0 ? 'over_limit' : 'ok');
  return {
    source: 'json',
    domain: 'd',
    rule: 'd|k',
    key,
    limit: 10,
    remaining: Math.max(0, remaining),
    resetMs: 60_000,
    atMs,
    ...extra,
    outcome,
  };
}

describe('createTopKeys', () => {
  it('lists rejected keys first, then by share of the limit used', () => {
    const t = createTopKeys();
    t.add(event('a', 9, 1000));
    t.add(event('b', 1, 1000));
    t.add(event('c', -1, 1000));
    t.add(event('d', 5, 1000));
    const top = t.top(3, 2000);
    assert.deepEqual(
      top.map((k) => k.key),
      ['c', 'b', 'd'],
    );
    assert.equal(top[0]?.over, true);
    assert.equal(top[0]?.rejected, 1);
    assert.equal(top[1]?.used, 0.9);
    assert.equal(top[1]?.remaining, 1);
    assert.equal(top[1]?.resetInMs, 59_000);
    assert.equal(top[1]?.lastSeenMsAgo, 1000);
  });

  it('keeps the latest state of a key and counts its rejections', () => {
    const t = createTopKeys();
    t.add(event('a', -1, 1000));
    t.add(event('a', -1, 1100));
    t.add(event('a', 3, 1050)); // finished late: older than what is known
    const [a] = t.top(1, 1200);
    assert.equal(a?.over, true);
    assert.equal(a?.rejected, 2);
    t.add(event('a', 4, 1300));
    assert.equal(t.top(1, 1300)[0]?.over, false);
    assert.equal(t.top(1, 1300)[0]?.remaining, 4);
  });

  it('drops keys whose counters have reset, but shows a short rejection for a few seconds', () => {
    const t = createTopKeys({ minVisibleMs: 3000 });
    t.add(event('used', 2, 1000, { resetMs: 500 }));
    t.add(event('over', -1, 1000, { resetMs: 100 }));
    assert.deepEqual(
      t.top(5, 1200).map((k) => k.key),
      ['over', 'used'],
    );
    assert.deepEqual(
      t.top(5, 1600).map((k) => k.key),
      ['over'],
    );
    assert.deepEqual(t.top(5, 4001), []);
    assert.equal(t.size, 0);
  });

  it('ignores decisions without a finite limit and list answers', () => {
    const t = createTopKeys();
    const { limit: _limit, ...noLimit } = event('x', 1, 1000);
    t.add(noLimit);
    t.add(event('y', 1, 1000, { limit: Number.POSITIVE_INFINITY }));
    t.add(event('z', -1, 1000, { list: 'deny' }));
    assert.equal(t.size, 0);
  });

  it('treats a shadow decision with nothing left as over its limit', () => {
    const t = createTopKeys();
    t.add(event('s', 0, 1000, { outcome: 'shadow' }));
    const [s] = t.top(1, 1000);
    assert.equal(s?.over, true);
    assert.equal(s?.shadow, true);
  });

  it('stays bounded at 10,000+ distinct keys and keeps the most pressed ones', () => {
    const t = createTopKeys({ capacity: 512 });
    for (let i = 0; i < 20_000; i++) {
      // Every 1000th key is over its limit; the rest use a little of it.
      t.add(event(`k${i}`, i % 1000 === 0 ? -1 : 8, 1000 + i));
      assert.ok(t.size < 1024);
    }
    const top = t.top(20, 25_000);
    assert.equal(top.length, 20);
    const over = top.filter((k) => k.over).map((k) => k.key);
    assert.deepEqual(over.sort(), Array.from({ length: 20 }, (_, i) => `k${i * 1000}`).sort());
  });
});
