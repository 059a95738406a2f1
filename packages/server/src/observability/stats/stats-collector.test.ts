import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DecisionEvent } from '../decision-events.js';
import { createDecisionHub } from '../decision-events.js';
import { createStatsCollector } from './stats-collector.js';

const base: DecisionEvent = { source: 'grpc', domain: 'd', rule: 'd|ip', key: 'ip=1', outcome: 'ok', atMs: 0 };

describe('createStatsCollector', () => {
  it('counts the hub decisions per rule and per second, up to the last complete second', () => {
    let nowMs = 30_000;
    const hub = createDecisionHub();
    const stats = createStatsCollector({ hub, now: () => nowMs, windowS: 60 });
    nowMs = 100_500;
    hub.emit({ ...base, atMs: 98_100 });
    hub.emit({ ...base, atMs: 99_100, outcome: 'over_limit' });
    hub.emit({ ...base, atMs: 99_200, rule: 'd|key', outcome: 'near_limit' });
    hub.emit({ ...base, atMs: 100_100 }); // the current second: in the totals, not yet in the counts
    const snap = stats.stats();
    assert.equal(snap.toS, 99);
    assert.equal(snap.fromS, 41);
    assert.equal(snap.total, 4);
    const ip = snap.rules.find((r) => r.rule === 'd|ip');
    assert.deepEqual(ip?.counts.ok.slice(-2), [1, 0]);
    assert.deepEqual(ip?.counts.over_limit.slice(-2), [0, 1]);
    assert.equal(ip?.counts.ok.length, 59);
    assert.deepEqual(ip?.totals, { ok: 2, near_limit: 0, over_limit: 1, shadow: 0 });
    assert.equal(snap.rules.find((r) => r.rule === 'd|key')?.totals.near_limit, 1);

    nowMs = 101_000;
    const next = stats.stats(99);
    assert.equal(next.fromS, 100);
    assert.deepEqual(next.rules.find((r) => r.rule === 'd|ip')?.counts.ok, [1]);
    stats.close();
    hub.emit({ ...base, atMs: 100_200 });
    assert.equal(stats.stats().total, 4);
    assert.equal(hub.active, false);
  });

  it('names list answers and unmatched descriptors, and lumps rules past maxRules', () => {
    const stats = createStatsCollector({ now: () => 5000, maxRules: 3 });
    stats.record({ ...base, atMs: 5000, list: 'deny', outcome: 'over_limit', rule: '' });
    stats.record({ ...base, atMs: 5000, rule: '' });
    stats.record({ ...base, atMs: 5000, rule: 'a' });
    stats.record({ ...base, atMs: 5000, rule: 'b' });
    stats.record({ ...base, atMs: 5000, rule: 'c' });
    const rules = stats.stats().rules.map((r) => `${r.rule}:${r.totals.ok + r.totals.over_limit}`);
    assert.deepEqual(rules, ['list:deny:1', '(none):1', 'a:1', '(other):2']);
  });

  it('starts its window when it was created', () => {
    let nowMs = 10_200;
    const stats = createStatsCollector({ now: () => nowMs });
    nowMs = 13_000;
    const snap = stats.stats();
    assert.equal(snap.fromS, 10);
    assert.equal(snap.toS, 12);
  });

  it('forgets rules idle for a whole window', () => {
    let nowMs = 10_000;
    const stats = createStatsCollector({ now: () => nowMs, windowS: 10 });
    stats.record({ ...base, atMs: 9000 });
    assert.equal(stats.stats().rules.length, 1);
    nowMs = 30_000;
    assert.equal(stats.stats().rules.length, 0);
  });

  it('answers the most pressed keys', () => {
    const stats = createStatsCollector({ now: () => 2000 });
    stats.record({ ...base, atMs: 1000, key: 'ip=1', limit: 10, remaining: 9, resetMs: 5000 });
    stats.record({ ...base, atMs: 1000, key: 'ip=2', limit: 10, remaining: 0, resetMs: 5000, outcome: 'over_limit' });
    assert.deepEqual(
      stats.topKeys().map((k) => k.key),
      ['ip=2', 'ip=1'],
    );
    assert.equal(stats.trackedKeys, 2);
  });
});
