import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import fc from 'fast-check';
import { createManualClock } from '../core/clock.js';
import { isSluiceError } from '../core/errors.js';
import { createAdaptiveLimiter } from './create-adaptive-limiter.js';
import type { AdaptivePermit } from './decision.js';
import { simulateService } from './simulate-service.js';

const permit = (d: ReturnType<ReturnType<typeof createAdaptiveLimiter>['tryAcquire']>) => {
  assert.ok(d.allowed, `expected a permit, got ${JSON.stringify(d)}`);
  return d as AdaptivePermit;
};

/** A limiter fixed at `limit`, half for critical, half for batch. */
const halfAndHalf = (limit: number, more: Parameters<typeof createAdaptiveLimiter>[0] = {}) =>
  createAdaptiveLimiter({
    initialLimit: limit,
    minLimit: limit,
    maxLimit: limit,
    priorities: { critical: 0.5, batch: 0.5 },
    ...more,
  });

describe('createAdaptiveLimiter: convergence on a simulated service (injected clock)', () => {
  // 32 concurrent at 10 ms, offered 3× capacity; then the service time rises 5× for good.
  const phases = (deadlineMs: number) => ({
    deadlineMs,
    sampleEveryMs: 500,
    phases: [
      { durationMs: 15_000, capacity: 32, serviceMs: 10, offeredPerMs: 9.6 },
      { durationMs: 15_000, capacity: 32, serviceMs: 50, offeredPerMs: 9.6 },
    ],
  });
  const settled = (timeline: { atMs: number; limit: number }[], fromMs: number, toMs: number) =>
    timeline.filter((p) => p.atMs >= fromMs && p.atMs < toMs).map((p) => p.limit);

  for (const algorithm of ['gradient2', 'vegas'] as const)
    it(`${algorithm} settles near the capacity, before and within 10 s after the slowdown`, () => {
      const clock = createManualClock(0);
      const limiter = createAdaptiveLimiter({ algorithm, initialLimit: 10, maxLimit: 1000, clock });
      const run = simulateService(limiter, { clock, ...phases(1000) });
      // Latency-based: the limit stays near the 32 the service can run at once, never at the 1000 allowed.
      for (const limit of settled(run.timeline, 5_000, 15_000)) assert.ok(limit >= 32 && limit <= 80, `${limit}`);
      for (const limit of settled(run.timeline, 25_000, 30_000)) assert.ok(limit >= 24 && limit <= 80, `${limit}`);
      // Every admitted request finished before its deadline (the queue never grew past 1 s), but for
      // those still running when the run ended.
      assert.ok((run.admitted.default as number) - (run.good.default as number) <= 80);
      assert.equal(limiter.inFlight, 0);
    });

  it('aimd (loss-based) settles where the service starts dropping, and backs off after the slowdown', () => {
    const clock = createManualClock(0);
    const limiter = createAdaptiveLimiter({ algorithm: 'aimd', initialLimit: 10, maxLimit: 1000, clock });
    // The service times out requests queued past twice the service time: drops start past 64 in flight.
    const run = simulateService(limiter, { clock, ...phases(20) });
    for (const limit of settled(run.timeline, 5_000, 15_000)) assert.ok(limit >= 32 && limit <= 80, `${limit}`);
    // At 50 ms per request a 20 ms deadline drops everything: the limit falls to its floor.
    for (const limit of settled(run.timeline, 20_000, 30_000)) assert.ok(limit <= 5, `${limit}`);
  });

  it('an app-limited service (demand below the limit) does not grow the limit', () => {
    for (const algorithm of ['gradient2', 'vegas', 'aimd'] as const) {
      const clock = createManualClock(0);
      const limiter = createAdaptiveLimiter({ algorithm, initialLimit: 50, maxLimit: 1000, clock });
      simulateService(limiter, {
        clock,
        phases: [{ durationMs: 10_000, capacity: 32, serviceMs: 10, offeredPerMs: 1 }],
      });
      assert.ok(limiter.limit <= 60, `${algorithm}: ${limiter.limit}`);
    }
  });
});

describe('createAdaptiveLimiter: priorities', () => {
  it('a priority with demand is never refused below its guaranteed share (property, fixed limit)', () => {
    const shares = fc
      .array(fc.integer({ min: 1, max: 10 }), { minLength: 1, maxLength: 4 })
      .map((w) => w.map((x) => x / w.reduce((a, b) => a + b, 0) - 1e-9));
    const step = fc.record({
      advanceMs: fc.integer({ min: 0, max: 900 }),
      attempts: fc.array(fc.nat(3), { maxLength: 12 }),
      releases: fc.array(fc.nat(1000), { maxLength: 12 }),
    });
    fc.assert(
      fc.property(shares, fc.integer({ min: 4, max: 40 }), fc.array(step, { maxLength: 60 }), (w, limit, steps) => {
        const clock = createManualClock(0);
        const priorities = Object.fromEntries(w.map((s, i) => [`p${i}`, s]));
        const limiter = createAdaptiveLimiter({
          initialLimit: limit,
          minLimit: limit,
          maxLimit: limit,
          priorities,
          clock,
        });
        const held: AdaptivePermit[] = [];
        // Every priority asks once at the start, and gives its place back: from then on each has demand
        // (a place borrowed before a priority ever asked cannot be taken back, as nothing is preempted).
        const primed = limiter.priorities.map((name) => limiter.tryAcquire({ priority: name }));
        for (const d of primed) if (d.allowed) d.release('ignore');
        for (const s of steps) {
          clock.advance(s.advanceMs);
          for (const n of [...s.attempts, ...limiter.priorities.keys()]) {
            const name = limiter.priorities[n % w.length] as string;
            const before = limiter.stats().priorities[name];
            const d = limiter.tryAcquire({ priority: name });
            if (d.allowed) held.push(d);
            else assert.ok(before && before.inFlight >= before.guaranteed, `${name} refused below its share`);
            assert.ok(limiter.inFlight <= limit);
          }
          for (const r of s.releases) {
            if (held.length === 0) break;
            held.splice(r % held.length, 1)[0]?.release('ignore');
          }
        }
        for (const p of held) p.release('ignore');
        assert.equal(limiter.inFlight, 0);
      }),
      { numRuns: 300 },
    );
  });

  it('a priority borrows what idle ones leave, and the borrower is refused first when they return', () => {
    const clock = createManualClock(0);
    const limiter = halfAndHalf(10, { clock });
    const batch = Array.from({ length: 10 }, () => permit(limiter.tryAcquire({ priority: 'batch' })));
    assert.equal(limiter.inFlight, 10);
    // critical returns: it is refused only while batch holds its borrowed places...
    assert.equal(limiter.tryAcquire({ priority: 'critical' }).allowed, false);
    batch.pop()?.release('ignore');
    // ...and a freed place goes to critical, not back to batch.
    assert.equal(limiter.tryAcquire({ priority: 'batch' }).allowed, false);
    const critical = permit(limiter.tryAcquire({ priority: 'critical' }));
    assert.equal(limiter.stats().priorities.batch?.shed, 1);
    for (const p of [...batch, critical]) p.release('ignore');
    assert.equal(limiter.inFlight, 0);
  });

  it('every priority shows in stats(), whatever its name', () => {
    const limiter = createAdaptiveLimiter({ priorities: JSON.parse('{"__proto__": 0.5, "constructor": 0.5}') });
    const figures = limiter.stats().priorities;
    assert.deepEqual(Object.keys(figures), ['__proto__', 'constructor']);
    assert.equal(Object.getOwnPropertyDescriptor(figures, '__proto__')?.value.share, 0.5);
    permit(limiter.tryAcquire({ priority: '__proto__' })).release('ignore');
    assert.equal(Object.getOwnPropertyDescriptor(limiter.stats().priorities, '__proto__')?.value.admitted, 1);
  });

  it('an unknown priority is a coded error; no priority means the least important', () => {
    const limiter = createAdaptiveLimiter({ priorities: { critical: 0.6, batch: 0.4 } });
    assert.throws(() => limiter.tryAcquire({ priority: 'urgent' }), { code: 'ERR_SLUICE_ADAPTIVE_UNKNOWN_PRIORITY' });
    const d = permit(limiter.tryAcquire());
    assert.equal(d.priority, 'batch');
    d.release();
  });
});

describe('createAdaptiveLimiter: queue', () => {
  it('waits for a freed place, most important first, bounded in size and time', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const limiter = halfAndHalf(2, { queue: { size: 2, timeoutMs: 500 } });
      const held = [
        permit(await limiter.acquire({ priority: 'batch' })),
        permit(await limiter.acquire({ priority: 'batch' })),
      ];
      const batchWait = limiter.acquire({ priority: 'batch' });
      const batchWait2 = limiter.acquire({ priority: 'batch' });
      assert.equal(limiter.queued, 2);
      // Full: a critical arrival takes the newest batch waiter's place.
      const criticalWait = limiter.acquire({ priority: 'critical' });
      const evicted = await batchWait2;
      assert.equal(evicted.allowed || evicted.reason, 'queue-full');
      held.pop()?.release('ignore');
      const critical = permit(await criticalWait);
      assert.equal(critical.priority, 'critical');
      // The remaining batch waiter times out: nothing was freed within 500 ms.
      mock.timers.tick(500);
      const timedOut = await batchWait;
      assert.equal(timedOut.allowed || timedOut.reason, 'queue-timeout');
      assert.equal(limiter.queued, 0);
      critical.release('ignore');
      held.pop()?.release('ignore');
      assert.equal(limiter.inFlight, 0);
      assert.equal(limiter.stats().priorities.batch?.shed, 2);
    } finally {
      mock.timers.reset();
    }
  });

  it('a waiter is served before a later arrival once a place frees without a release', async () => {
    const clock = createManualClock(0);
    const limiter = halfAndHalf(2, { queue: { size: 4 }, clock });
    const held = permit(limiter.tryAcquire({ priority: 'critical' }));
    permit(limiter.tryAcquire({ priority: 'batch' })).release('ignore');
    // Batch has demand: its guaranteed place stays reserved, so a second critical request waits.
    const first = limiter.acquire({ priority: 'critical' });
    assert.equal(limiter.queued, 1);
    clock.advance(1500); // batch's demand lapses: the reserved place is free to borrow
    const later = limiter.acquire({ priority: 'critical' });
    const served = permit(await first);
    assert.equal(limiter.queued, 1, 'the later arrival waits behind it');
    served.release('ignore');
    permit(await later).release('ignore');
    held.release('ignore');
    assert.equal(limiter.inFlight, 0);
  });

  it('a waiter is served when places reserved for a priority that asked once free up', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const clock = createManualClock(0);
      const limiter = halfAndHalf(10, { queue: { size: 8, timeoutMs: 4000 }, clock });
      permit(limiter.tryAcquire({ priority: 'critical' })).release('ignore');
      const held = Array.from({ length: 5 }, () => permit(limiter.tryAcquire({ priority: 'batch' })));
      // Critical's 5 places stay reserved while its demand lasts (1 s); nothing is released after.
      const sixth = limiter.acquire({ priority: 'batch' });
      clock.advance(999);
      mock.timers.tick(999);
      assert.equal(limiter.queued, 1, 'critical still has demand');
      clock.advance(1);
      mock.timers.tick(1);
      assert.equal(limiter.queued, 0, 'served as soon as the demand lapsed');
      const served = permit(await sixth);
      for (const p of [...held, served]) p.release('ignore');
      assert.equal(limiter.inFlight, 0);
    } finally {
      mock.timers.reset();
    }
  });

  it('an aborted waiter leaves the queue and holds nothing', async () => {
    const limiter = createAdaptiveLimiter({ initialLimit: 1, minLimit: 1, maxLimit: 1, queue: { size: 4 } });
    const held = permit(await limiter.acquire());
    const controller = new AbortController();
    const waiting = limiter.acquire({ signal: controller.signal });
    controller.abort();
    const d = await waiting;
    assert.equal(d.allowed || d.reason, 'aborted');
    held.release();
    assert.equal(limiter.inFlight, 0);
    assert.equal(limiter.queued, 0);
  });
});

describe('createAdaptiveLimiter: misuse gets coded errors', () => {
  it('bad options', () => {
    const bad: [unknown, `ERR_SLUICE_${string}`][] = [
      [{ algorithm: 'bbr' }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ minLimit: 0 }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ minLimit: 10, maxLimit: 5 }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ initialLimit: 2000 }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ priorities: { a: 0.7, b: 0.7 } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ priorities: { a: -1 } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ priorities: {} }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ queue: { size: 0 } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ queue: { size: 5, timeoutMs: 1.5 } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ limit: 5 }, 'ERR_SLUICE_UNKNOWN_OPTION'],
      [{ queue: { size: 1, timeout: 5 } }, 'ERR_SLUICE_UNKNOWN_OPTION'],
      [{ aimd: { backoff: 0.5 } }, 'ERR_SLUICE_UNKNOWN_OPTION'],
      [{ aimd: 'x' }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ aimd: { backoffRatio: Number.NaN } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ aimd: { backoffRatio: 2 } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ aimd: { latencyBoundMs: -1 } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ vegas: { baselineMs: '2s' } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ gradient2: { tolerance: Number.NaN } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ gradient2: { smoothing: 'x' } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
      [{ gradient2: { smoothing: -5 } }, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'],
    ];
    for (const [options, code] of bad)
      assert.throws(
        () => createAdaptiveLimiter(options as never),
        (e) => isSluiceError(e, code) && e.message.length > 20,
        JSON.stringify(options),
      );
  });

  it('a bad tuning value names its option; good tuning is accepted', () => {
    assert.throws(() => createAdaptiveLimiter({ gradient2: { tolerance: Number.NaN } }), {
      code: 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION',
      option: 'gradient2.tolerance',
    });
    assert.throws(() => createAdaptiveLimiter({ aimd: { backoff: 0.5 } as never }), {
      code: 'ERR_SLUICE_UNKNOWN_OPTION',
      option: 'aimd.backoff',
    });
    const tuned = createAdaptiveLimiter({
      aimd: { backoffRatio: 0.5, latencyBoundMs: 100 },
      vegas: { baselineMs: 1000 },
      gradient2: { tolerance: 2, baselineMs: 500, smoothing: 1 },
    });
    permit(tuned.tryAcquire()).release();
  });

  it('a double release or an unknown outcome', () => {
    const limiter = createAdaptiveLimiter();
    const p = permit(limiter.tryAcquire());
    assert.throws(() => p.release('ok' as never), { code: 'ERR_SLUICE_ADAPTIVE_INVALID_OUTCOME' });
    assert.equal(limiter.inFlight, 1, 'a refused release holds the place still');
    p.release('dropped');
    assert.throws(() => p.release(), { code: 'ERR_SLUICE_ADAPTIVE_ALREADY_RELEASED' });
    assert.equal(limiter.inFlight, 0);
  });
});
