/**
 * Properties of debt (issue 40) on the pure algorithms, on random traces of checks and charges with injected time:
 * `remaining` is never below 0; a charge's `retryAfterMs` is exact — one millisecond before it a cost-0 look is still
 * in debt, at it the key owes nothing; and GCRA charged like a token bucket decides like it afterwards. Seeds are
 * printed by fast-check on failure; rerun one with FC_SEED=<seed>.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { gcra, NUMERIC_ALGORITHMS, SLOT_WIDTH, tokenBucket } from '../../src/algorithms/index.js';
import { SlidingLogState, slidingLog } from '../../src/algorithms/sliding-log.js';
import type { Algorithm } from '../../src/algorithms/types.js';
import type { Decision } from '../../src/core/decision.js';
import { ALGORITHMS, type AlgorithmName, type ResolvedPolicy, resolvePolicy } from '../../src/core/policy.js';

const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
const params = { numRuns: 200, ...(seed === undefined ? {} : { seed }) };
const T0 = 1_700_000_000_000;

/** Steps: wait `gap` ms, then check `cost` (commit) or charge `cost`. */
const stepsArb = fc.array(
  fc.record({
    gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 80 }), fc.integer({ min: 0, max: 3000 })),
    charge: fc.boolean(),
    cost: fc.integer({ min: 0, max: 30 }),
  }),
  { minLength: 1, maxLength: 60 },
);
const policyArb = fc.record({
  limit: fc.integer({ min: 1, max: 12 }),
  period: fc.integer({ min: 1, max: 2000 }),
  burst: fc.integer({ min: 1, max: 15 }),
});

/** One key's state under `algorithm`, with copy (to look ahead without changing it). */
function keyOf(name: AlgorithmName) {
  if (name === 'sliding-log') {
    let log = new SlidingLogState();
    const copy = () => Object.assign(new SlidingLogState(), { ...log, entries: [...log.entries] });
    return {
      check: (now: number, p: ResolvedPolicy, cost: number, commit: boolean) =>
        slidingLog.check(log, 0, now, p, cost, commit),
      charge: (now: number, p: ResolvedPolicy, cost: number) => slidingLog.charge(log, 0, now, p, cost),
      look: (now: number, p: ResolvedPolicy) => slidingLog.check(copy(), 0, now, p, 0, false),
      reset: () => {
        log = new SlidingLogState();
      },
    };
  }
  const algorithm: Algorithm = NUMERIC_ALGORITHMS[name];
  const s = new Float64Array(SLOT_WIDTH);
  return {
    check: (now: number, p: ResolvedPolicy, cost: number, commit: boolean) =>
      algorithm.check(s, 0, now, p, cost, commit),
    charge: (now: number, p: ResolvedPolicy, cost: number) => algorithm.charge(s, 0, now, p, cost),
    look: (now: number, p: ResolvedPolicy) => algorithm.check(Float64Array.from(s), 0, now, p, 0, false),
    reset: () => s.fill(0),
  };
}

describe('debt properties', () => {
  for (const name of ALGORITHMS) {
    it(`${name}: remaining ≥ 0 always; a charge's retryAfterMs is exactly when the debt is paid`, () => {
      fc.assert(
        fc.property(policyArb, stepsArb, ({ limit, period, burst }, steps) => {
          const p = resolvePolicy({
            algorithm: name,
            limit,
            period,
            ...(name.includes('bucket') || name === 'gcra' ? { burst } : {}),
          });
          const key = keyOf(name);
          let now = T0;
          for (const { gap, charge, cost } of steps) {
            now += gap;
            const d: Decision = charge ? key.charge(now, p, cost) : key.check(now, p, cost, true);
            assert.ok(d.remaining >= 0, `remaining ${d.remaining}`);
            if (!charge) continue;
            assert.equal(d.allowed, key.look(now, p).allowed, 'a charge answers what a cost-0 look sees');
            if (d.allowed) continue;
            assert.ok(Number.isFinite(d.retryAfterMs) && d.retryAfterMs > 0);
            assert.equal(key.look(now + d.retryAfterMs - 1, p).allowed, false, 'still owes 1 ms before');
            assert.equal(key.look(now + d.retryAfterMs, p).allowed, true, 'paid at retryAfterMs');
          }
        }),
        params,
      );
    });
  }

  it('GCRA charged and checked as a token bucket decides as the token bucket', () => {
    fc.assert(
      fc.property(policyArb, stepsArb, ({ limit, period, burst }, steps) => {
        const tb = resolvePolicy({ algorithm: 'token-bucket', limit, period, burst });
        const gc = resolvePolicy({ algorithm: 'gcra', limit, period, burst });
        const [a, b] = [new Float64Array(SLOT_WIDTH), new Float64Array(SLOT_WIDTH)];
        let now = T0;
        for (const { gap, charge, cost } of steps) {
          now += gap;
          const x = charge ? tokenBucket.charge(a, 0, now, tb, cost) : tokenBucket.check(a, 0, now, tb, cost, true);
          const y = charge ? gcra.charge(b, 0, now, gc, cost) : gcra.check(b, 0, now, gc, cost, true);
          assert.deepEqual(y, x);
        }
      }),
      params,
    );
  });
});
