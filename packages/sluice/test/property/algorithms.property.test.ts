/**
 * Properties of the algorithms on random traces with injected time. Seeds are printed by fast-check
 * on failure; rerun one with FC_SEED=<seed>.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { runTrace } from '../../../../test/helpers/trace.js';
import { NUMERIC_ALGORITHMS, SLOT_WIDTH } from '../../src/algorithms/index.js';
import { SlidingLogState, slidingLog } from '../../src/algorithms/sliding-log.js';
import type { Decision } from '../../src/core/decision.js';
import { ALGORITHMS, type AlgorithmName, type ResolvedPolicy, resolvePolicy } from '../../src/core/policy.js';

const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
const params = { numRuns: 200, ...(seed === undefined ? {} : { seed }) };

/** A trace: gaps between requests (often 0, sometimes long) and their costs. */
const traceArb = fc.array(
  fc.tuple(
    fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 3000 })),
    fc.integer({ min: 0, max: 4 }),
  ),
  {
    minLength: 1,
    maxLength: 120,
  },
);
const policyArb = fc.record({
  limit: fc.integer({ min: 1, max: 12 }),
  period: fc.integer({ min: 1, max: 2000 }),
  burst: fc.integer({ min: 1, max: 15 }),
});

function toTimes(trace: readonly [number, number][], start: number): [number, number][] {
  let t = start;
  return trace.map(([gap, cost]) => {
    t += gap;
    return [t, cost];
  });
}

describe('algorithm properties', () => {
  it('sliding-log never admits more than limit units in any window of one period', () => {
    fc.assert(
      fc.property(policyArb, traceArb, fc.integer({ min: 0, max: 1e12 }), ({ limit, period }, trace, start) => {
        const timed = toTimes(trace, start);
        const ds = runTrace({ algorithm: 'sliding-log', limit, period }, timed);
        const admittedAt = timed.filter((_, i) => ds[i]?.allowed);
        for (const [t] of admittedAt) {
          const inWindow = admittedAt.filter(([u]) => u > t - period && u <= t).reduce((sum, [, c]) => sum + c, 0);
          assert.ok(inWindow <= limit, `${inWindow} units in (${t - period}, ${t}]`);
        }
      }),
      params,
    );
  });

  it('fixed-window never admits more than limit units per aligned window', () => {
    fc.assert(
      fc.property(policyArb, traceArb, fc.integer({ min: 0, max: 1e12 }), ({ limit, period }, trace, start) => {
        const timed = toTimes(trace, start);
        const ds = runTrace({ algorithm: 'fixed-window', limit, period }, timed);
        const perWindow = new Map<number, number>();
        timed.forEach(([t, c], i) => {
          if (ds[i]?.allowed) perWindow.set(Math.floor(t / period), (perWindow.get(Math.floor(t / period)) ?? 0) + c);
        });
        for (const units of perWindow.values()) assert.ok(units <= limit);
      }),
      params,
    );
  });

  it('token bucket and GCRA with the same limit, period and burst decide identically', () => {
    fc.assert(
      fc.property(
        fc.record({
          limit: fc.integer({ min: 1, max: 5000 }),
          period: fc.integer({ min: 1, max: 3_600_000 }),
          burst: fc.integer({ min: 1, max: 5000 }),
        }),
        traceArb,
        fc.integer({ min: 0, max: 4e12 }),
        (policy, trace, start) => {
          const timed = toTimes(trace, start);
          const bucket = runTrace({ algorithm: 'token-bucket', ...policy }, timed);
          const cell = runTrace({ algorithm: 'gcra', ...policy }, timed);
          assert.deepEqual(cell, bucket);
        },
      ),
      params,
    );
  });

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: remaining is never negative and a rejected check leaves the state unchanged`, () => {
      fc.assert(
        fc.property(policyArb, traceArb, fc.integer({ min: 0, max: 1e12 }), (options, trace, start) => {
          const p = resolvePolicy({
            algorithm,
            limit: options.limit,
            period: options.period,
            ...(bucket(algorithm) ? { burst: options.burst } : {}),
          });
          const step = stepper(p);
          for (const [t, cost] of toTimes(trace, start)) {
            const before = step.snapshot();
            const d = step.check(t, cost);
            assert.ok(d.remaining >= 0 && Number.isInteger(d.remaining), `remaining ${d.remaining}`);
            assert.ok(d.resetMs >= 0 && d.retryAfterMs >= 0);
            if (!d.allowed) assert.deepEqual(step.snapshot(), before, 'a rejection changed the state');
            if (d.allowed) assert.equal(d.retryAfterMs, 0);
          }
        }),
        params,
      );
    });
  }
});

const bucket = (a: AlgorithmName) => a === 'token-bucket' || a === 'leaky-bucket' || a === 'gcra';

function stepper(p: ResolvedPolicy): { check(t: number, cost: number): Decision; snapshot(): unknown } {
  if (p.algorithm === 'sliding-log') {
    const log = new SlidingLogState();
    return {
      check: (t, cost) => slidingLog.check(log, 0, t, p, cost, true),
      snapshot: () => ({ entries: [...log.entries], head: log.head, total: log.total }),
    };
  }
  const slots = new Float64Array(SLOT_WIDTH);
  const algorithm = NUMERIC_ALGORITHMS[p.algorithm];
  return { check: (t, cost) => algorithm.check(slots, 0, t, p, cost, true), snapshot: () => [...slots] };
}
