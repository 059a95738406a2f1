import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ALGORITHMS, resolvePolicy, tokenBucket } from 'sluice';
import { type AlgorithmRun, simulate } from './engine.js';
import { generateTrace, TRACE_NAMES, type Trace } from './trace.js';

/** The most units admitted in any window (t - period, t], by brute force over every pair. */
function bruteForcePeak(trace: Trace, allowed: Uint8Array, periodMs: number): number {
  const admitted = trace.events.filter((_, i) => allowed[i] === 1);
  let best = 0;
  for (const end of admitted) {
    let units = 0;
    for (const e of admitted) if (e.atMs > end.atMs - periodMs && e.atMs <= end.atMs) units += e.cost;
    best = Math.max(best, units);
  }
  return best;
}

function run(trace: Trace, algorithm: AlgorithmRun['algorithm'], limit: number, periodMs: number, burst?: number) {
  const result = simulate({
    trace,
    algorithms: [algorithm],
    limit,
    periodMs,
    ...(burst === undefined ? {} : { burst }),
  });
  return result.runs[0] as AlgorithmRun;
}

const POLICIES = [
  { limit: 10, periodMs: 1000 },
  { limit: 5, periodMs: 200 },
  { limit: 100, periodMs: 60_000 },
];

describe('simulate: the boundary trace', () => {
  for (const { limit, periodMs } of POLICIES) {
    it(`fixed-window admits 2 × ${limit} within one period of ${periodMs} ms; sliding-log never more than ${limit}`, () => {
      const trace = generateTrace('boundary', { limit, periodMs });
      const fixed = run(trace, 'fixed-window', limit, periodMs);
      assert.equal(fixed.rejected, 0, 'every request of the boundary trace passes a fixed window');
      assert.equal(fixed.peak.units, 2 * limit);
      assert.equal(bruteForcePeak(trace, fixed.allowed, periodMs), 2 * limit);
      const log = run(trace, 'sliding-log', limit, periodMs);
      assert.equal(log.peak.units, limit);
      assert.equal(bruteForcePeak(trace, log.allowed, periodMs), limit);
      assert.equal(log.admitted, trace.events.length / 2);
    });
  }
});

describe('simulate: every trace', () => {
  for (const name of TRACE_NAMES) {
    it(`${name}: the reported peaks are the true peaks; sliding-log stays within the limit`, () => {
      for (const { limit, periodMs } of POLICIES.slice(0, 2)) {
        const trace = generateTrace(name, { limit, periodMs });
        const result = simulate({ trace, algorithms: ALGORITHMS, limit, periodMs });
        for (const r of result.runs) {
          assert.equal(r.admitted + r.rejected, trace.events.length);
          assert.equal(
            r.admitted,
            r.allowed.reduce((s, a) => s + a, 0),
          );
          assert.equal(r.peak.units, bruteForcePeak(trace, r.allowed, periodMs), `${r.algorithm} peak`);
        }
        const byName = Object.fromEntries(result.runs.map((r) => [r.algorithm, r]));
        assert.ok((byName['sliding-log']?.peak.units ?? Infinity) <= limit);
        // A token bucket and a GCRA of the same burst make the same decisions (docs/algorithms.md).
        assert.deepEqual(byName.gcra?.allowed, byName['token-bucket']?.allowed);
        // The leaky bucket admits like a token bucket, but what leaves its queue never exceeds the rate.
        assert.deepEqual(byName['leaky-bucket']?.allowed, byName['token-bucket']?.allowed);
        assert.ok((byName['leaky-bucket']?.shapedPeak?.units ?? Infinity) <= limit);
      }
    });
  }

  it('decides as the algorithm step itself does (the memory store adds nothing)', () => {
    const trace = generateTrace('poisson', { limit: 10, periodMs: 1000, load: 1.5 });
    const r = run(trace, 'token-bucket', 10, 1000, 4);
    const policy = resolvePolicy({ algorithm: 'token-bucket', limit: 10, period: 1000, burst: 4 });
    const state = new Float64Array(3);
    const expected = trace.events.map((e) =>
      tokenBucket.check(state, 0, e.atMs, policy, e.cost, true).allowed ? 1 : 0,
    );
    assert.deepEqual([...r.allowed], expected);
    assert.equal(r.policy.burst, 4);
  });

  it('respects costs: a request bigger than the limit is rejected by every algorithm', () => {
    const trace: Trace = {
      name: 'costs',
      events: [
        { atMs: 0, cost: 3 },
        { atMs: 10, cost: 11 },
        { atMs: 20, cost: 0 },
        { atMs: 30, cost: 7 },
        { atMs: 40, cost: 1 },
      ],
    };
    const result = simulate({ trace, algorithms: ALGORITHMS, limit: 10, periodMs: 1000 });
    for (const r of result.runs) {
      assert.deepEqual([...r.allowed], [1, 0, 1, 1, 0], r.algorithm);
      assert.equal(r.peak.units, 10);
    }
  });
});

describe('simulate: sliding-window against the exact sliding log', () => {
  it('counts exactly the decisions an exact log of the same admissions would have made differently', () => {
    const limit = 10;
    const periodMs = 1000;
    const trace = generateTrace('poisson', { limit, periodMs, durationMs: 300_000, seed: 7 });
    const r = run(trace, 'sliding-window', limit, periodMs);
    let wronglyAllowed = 0;
    let wronglyRejected = 0;
    const events = trace.events;
    events.forEach((e, i) => {
      let inWindow = 0;
      for (let j = i - 1; j >= 0 && (events[j]?.atMs as number) > e.atMs - periodMs; j--) {
        if (r.allowed[j] === 1) inWindow += events[j]?.cost as number;
      }
      const exact = inWindow + e.cost <= limit;
      if (r.allowed[i] === 1 && !exact) wronglyAllowed++;
      if (r.allowed[i] === 0 && exact) wronglyRejected++;
    });
    assert.ok(wronglyAllowed > 0 && wronglyRejected > 0, 'the approximation errs both ways at the limit');
    assert.deepEqual(r.exact, {
      total: events.length,
      wronglyAllowed,
      wronglyRejected,
      errorRate: (wronglyAllowed + wronglyRejected) / events.length,
    });
  });

  it('is reproducible: the same seed gives the same error rate, another seed another trace', () => {
    const a = run(generateTrace('poisson', { limit: 10, periodMs: 1000, seed: 3 }), 'sliding-window', 10, 1000);
    const b = run(generateTrace('poisson', { limit: 10, periodMs: 1000, seed: 3 }), 'sliding-window', 10, 1000);
    const c = run(generateTrace('poisson', { limit: 10, periodMs: 1000, seed: 4 }), 'sliding-window', 10, 1000);
    assert.deepEqual(a.exact, b.exact);
    assert.notDeepEqual([...a.allowed], [...c.allowed]);
  });

  it('makes no mistakes far below the limit', () => {
    const trace = generateTrace('poisson', { limit: 100, periodMs: 1000, load: 0.2, durationMs: 100_000 });
    assert.equal(run(trace, 'sliding-window', 100, 1000).exact?.errorRate, 0);
  });

  it('only sliding-window is compared, only leaky-bucket is shaped', () => {
    const trace = generateTrace('steady', { limit: 10, periodMs: 1000 });
    const result = simulate({ trace, algorithms: ALGORITHMS, limit: 10, periodMs: 1000 });
    for (const r of result.runs) {
      assert.equal(r.exact !== undefined, r.algorithm === 'sliding-window', r.algorithm);
      assert.equal(r.shapedPeak !== undefined, r.algorithm === 'leaky-bucket', r.algorithm);
    }
  });
});

describe('simulate: options', () => {
  it('reports progress up to the total', () => {
    const trace = generateTrace('poisson', { limit: 100, periodMs: 1000, durationMs: 300_000 });
    const seen: [number, number][] = [];
    simulate({
      trace,
      algorithms: ['fixed-window', 'gcra'],
      limit: 100,
      periodMs: 1000,
      onProgress: (d, t) => seen.push([d, t]),
    });
    const total = trace.events.length * 2;
    assert.ok(seen.length >= 2);
    assert.deepEqual(seen.at(-1), [total, total]);
    assert.ok(seen.every(([d], i) => i === 0 || d >= (seen[i - 1]?.[0] as number)));
  });

  it('rejects an empty list of algorithms and a bad policy with a coded error', () => {
    const trace = generateTrace('steady', { limit: 10, periodMs: 1000 });
    assert.throws(() => simulate({ trace, algorithms: [], limit: 10, periodMs: 1000 }), {
      code: 'ERR_SLUICE_INVALID_OPTION',
    });
    assert.throws(() => simulate({ trace, algorithms: ['gcra'], limit: 10, periodMs: 1000, burst: 0 }), {
      code: 'ERR_SLUICE_INVALID_BURST',
    });
  });

  it('gives burst to the bucket algorithms only', () => {
    const trace = generateTrace('bursty', { limit: 10, periodMs: 1000 });
    const result = simulate({
      trace,
      algorithms: ['fixed-window', 'token-bucket'],
      limit: 10,
      periodMs: 1000,
      burst: 3,
    });
    assert.equal(result.runs[0]?.policy.burst, 10);
    assert.equal(result.runs[1]?.policy.burst, 3);
    assert.equal(result.burst, 3);
  });
});
