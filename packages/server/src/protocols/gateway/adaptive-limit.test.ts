/**
 * The gateway's adaptive limit on an injected clock: the floor that keeps critical reachable when batch took the
 * whole limit first, unknown priorities as the least important, and reloads that rename the priorities.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from 'sluice';
import type { AdaptiveDecision } from 'sluice/adaptive';
import { parseRules, type RuleSet } from 'sluice/rules';
import { createGatewayAdaptive } from './adaptive-limit.js';

function rules(http: string): RuleSet {
  const result = parseRules([{ file: 'g.yaml', text: `domain: g\nhttp:\n${http}` }]);
  assert.ok(result.ok, JSON.stringify(result.ok ? '' : result.issues));
  return result.ruleSet;
}
const DEFAULTS = rules('  priorities: [{ path_prefix: /pay, priority: critical }]\n');
const GOLD = rules('  adaptive:\n    priorities: { gold: 0.6, silver: 0.3, bronze: 0.1 }\n');
// A fixed limit of 10, so that the figures below do not move with latency.
const fixed = () => ({
  algorithm: 'aimd' as const,
  initialLimit: 10,
  minLimit: 10,
  maxLimit: 10,
  clock: createManualClock(0),
});

function takeN(n: number, take: () => AdaptiveDecision): AdaptiveDecision[] {
  return Array.from({ length: n }, take);
}
const allowed = (ds: AdaptiveDecision[]) => ds.filter((d) => d.allowed).length;
const releaseAll = (ds: AdaptiveDecision[]) => {
  for (const d of ds) if (d.allowed) d.release('ignore');
};

describe('gateway adaptive limit', () => {
  it('batch that took the whole limit first cannot starve critical: critical gets its guarantee over it', () => {
    const limit = createGatewayAdaptive(fixed(), DEFAULTS);
    // Requests on no route (undefined) or naming no priority of the rules are batch, the least important.
    const batch = [...takeN(8, () => limit.take(DEFAULTS, undefined)), ...takeN(2, () => limit.take(DEFAULTS, 'nope'))];
    assert.equal(allowed(batch), 10, 'batch borrows the idle limit');
    const critical = takeN(6, () => limit.take(DEFAULTS, 'critical'));
    assert.equal(allowed(critical), 5, 'critical gets its guaranteed 5 places (share 0.5 of 10), over the limit');
    assert.equal(limit.take(DEFAULTS, undefined).allowed, false, 'batch is refused once critical wants its share');
    const s = limit.stats();
    assert.equal(s.inFlight, 15);
    assert.deepEqual(
      [s.priorities.critical?.admitted, s.priorities.critical?.shed, s.priorities.critical?.inFlight],
      [5, 1, 5],
    );
    assert.deepEqual([s.priorities.batch?.admitted, s.priorities.batch?.shed], [10, 1]);
    // A second release of an over-limit place gives back nothing more.
    const first = critical[0];
    if (first?.allowed) first.release();
    if (first?.allowed) first.release();
    releaseAll(critical);
    releaseAll(batch);
    assert.equal(limit.stats().inFlight, 0, 'every place comes back');
  });

  it('normal, too, but never past its guarantee; batch has no floor', () => {
    const limit = createGatewayAdaptive(fixed(), DEFAULTS);
    const critical = takeN(10, () => limit.take(DEFAULTS, 'critical'));
    assert.equal(allowed(critical), 10);
    assert.equal(allowed(takeN(5, () => limit.take(DEFAULTS, 'normal'))), 3, "normal's 3 places (0.3 of 10)");
    assert.equal(limit.take(DEFAULTS, 'batch').allowed, false);
    releaseAll(critical);
  });

  it('a reload naming other priorities reshapes the limit; counts carry over by name, old places drain', () => {
    const limit = createGatewayAdaptive(fixed(), DEFAULTS);
    const old = limit.take(DEFAULTS, 'critical');
    assert.ok(old.allowed);
    const gold = limit.take(GOLD, 'gold');
    assert.ok(gold.allowed);
    assert.equal(gold.priority, 'gold');
    assert.equal(limit.take(GOLD, 'critical').priority, 'bronze', 'an old name is now the least important');
    let s = limit.stats();
    assert.deepEqual(Object.keys(s.priorities), ['gold', 'silver', 'bronze']);
    assert.equal(s.limit, 10, 'the limit learnt so far carries over');
    assert.equal(s.inFlight, 3, "the old limiter's place still counts while it drains");
    old.release();
    assert.equal(limit.stats().inFlight, 2);
    // Back to the default names: critical's count from before the first reload carries over.
    const back = limit.take(DEFAULTS, 'critical');
    s = limit.stats();
    assert.deepEqual(Object.keys(s.priorities), ['critical', 'normal', 'batch']);
    assert.equal(s.priorities.critical?.admitted, 2);
    if (back.allowed) back.release();
    gold.release();
    assert.equal(limit.stats().inFlight, 1, 'the bronze place is still held');
  });

  it('a programmatic priorities option stands in for the defaults; the rules still win', () => {
    const limit = createGatewayAdaptive(
      { ...fixed(), priorities: { vip: 0.5, rest: 0.5 } },
      rules('  rate_limits: []\n'),
    );
    assert.deepEqual(Object.keys(limit.stats().priorities), ['vip', 'rest']);
    limit.take(GOLD, 'gold');
    assert.deepEqual(Object.keys(limit.stats().priorities), ['gold', 'silver', 'bronze']);
  });
});
