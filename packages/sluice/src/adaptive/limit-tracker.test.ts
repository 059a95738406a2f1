import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock, type ManualClock } from '../core/clock.js';
import { createBaselineLatency } from './baseline-latency.js';
import { type AdaptiveLimiter, createAdaptiveLimiter } from './create-adaptive-limiter.js';
import type { AdaptivePermit } from './decision.js';
import { simulateService } from './simulate-service.js';

const CAPACITY = 16;

/**
 * Closed loop on the injected clock: 48 callers (the first 10 critical), each asking again as soon as it
 * is answered, or 50 ms after a refusal, in front of a service that runs 16 requests at once and is
 * slower by the share past that. Answers the limit and in-flight at each second, and how often a
 * critical caller was refused.
 */
function closedLoop(limiter: AdaptiveLimiter, clock: ManualClock, phases: { durationMs: number; serviceMs: number }[]) {
  const callers = 48;
  const next = Array.from({ length: callers }, (_, c) => c);
  const running: { endMs: number; permit: AdaptivePermit; c: number }[] = [];
  const seconds: { limit: number; inFlight: number }[] = [];
  let criticalRefused = 0;
  let t = 0;
  for (const { durationMs, serviceMs } of phases)
    for (const end = t + durationMs; t < end; t++) {
      clock.set(t);
      for (let k = running.length - 1; k >= 0; k--) {
        const r = running[k] as (typeof running)[number];
        if (r.endMs > t) continue;
        running.splice(k, 1);
        r.permit.release('success');
        next[r.c] = t;
      }
      for (let c = 0; c < callers; c++) {
        if ((next[c] as number) > t) continue;
        const d = limiter.tryAcquire({ priority: c < 10 ? 'critical' : 'normal' });
        if (!d.allowed) {
          next[c] = t + 50;
          if (c < 10) criticalRefused++;
          continue;
        }
        next[c] = Number.POSITIVE_INFINITY;
        const latency = serviceMs * Math.max(1, limiter.inFlight / CAPACITY);
        running.push({ endMs: t + Math.ceil(latency), permit: d, c });
      }
      if (t % 1000 === 999) seconds.push({ limit: limiter.limit, inFlight: limiter.inFlight });
    }
  for (const r of running) r.permit.release('ignore');
  return { seconds, criticalRefused };
}

describe('adaptive limit: where it settles and how it follows a slowdown (injected clock)', () => {
  for (const algorithm of ['gradient2', 'vegas'] as const)
    it(`${algorithm}: a priority using less than its share does not freeze the limit; critical callers are never refused`, () => {
      const clock = createManualClock(0);
      const limiter = createAdaptiveLimiter({
        algorithm,
        initialLimit: 20,
        maxLimit: 500,
        priorities: { critical: 0.7, normal: 0.3 },
        clock,
      });
      // 10 critical callers hold at most 10 of critical's 70 %: the rest of its share is kept for it, so
      // fewer than half the limit's places are in use while normal callers are refused.
      const run = closedLoop(limiter, clock, [
        { durationMs: 10_000, serviceMs: 40 },
        { durationMs: 10_000, serviceMs: 200 },
      ]);
      assert.equal(run.criticalRefused, 0);
      // The service's queue stays short: at most twice what it runs at once, so latency at most 2×.
      for (const s of run.seconds.slice(3, 10)) assert.ok(s.inFlight <= 2 * CAPACITY, JSON.stringify(s));
      // After the 5× slowdown the limit moves (it shrinks while the latency looks like a queue).
      const before = (run.seconds[9] as { limit: number }).limit;
      const lowest = Math.min(...run.seconds.slice(10).map((s) => s.limit));
      assert.ok(lowest < before, `${algorithm}: the limit stayed at ${before} through the slowdown`);
    });

  for (const algorithm of ['gradient2', 'vegas'] as const)
    it(`${algorithm}: settles at the same place whether it starts below or above the capacity`, () => {
      const settled = [20, 64].map((initialLimit) => {
        const clock = createManualClock(0);
        const limiter = createAdaptiveLimiter({ algorithm, initialLimit, maxLimit: 500, clock });
        // Open loop at 3× capacity from the first millisecond: every window already holds a queue when
        // the limit starts above the capacity; the no-load latency is the fastest request's, not a
        // window's average.
        const run = simulateService(limiter, {
          clock,
          sampleEveryMs: 1000,
          deadlineMs: 1000,
          phases: [{ durationMs: 15_000, capacity: CAPACITY, serviceMs: 40, offeredPerMs: 1.2 }],
        });
        return (run.timeline[run.timeline.length - 1] as { limit: number }).limit;
      });
      const [low, high] = settled as [number, number];
      assert.ok(Math.abs(high - low) <= 0.2 * low, `${algorithm}: ${low} from 20, ${high} from 64`);
      assert.ok(high <= 2 * CAPACITY, `${algorithm}: ${high}`);
    });
});

/**
 * Closed loop on the injected clock: 30 callers of a 20 ms route, each asking again as soon as it is
 * answered (10 ms after a refusal), and one health check every 50 ms answered at once (0 ms). Past
 * `capacity` in flight the route is slower by the share past it (a queue). Answers the limit at each
 * half second.
 */
function routeWithHealthChecks(algorithm: 'gradient2' | 'vegas', capacity: number, durationMs: number): number[] {
  const clock = createManualClock(0);
  const limiter = createAdaptiveLimiter({ algorithm, initialLimit: 20, maxLimit: 500, clock });
  const running: { endMs: number; permit: AdaptivePermit; caller: number }[] = [];
  const askAtMs = Array.from({ length: 30 }, () => 0);
  const limits: number[] = [];
  for (let t = 0; t < durationMs; t++) {
    clock.set(t);
    for (const r of running.filter((r) => r.endMs <= t)) {
      r.permit.release('success');
      askAtMs[r.caller] = t;
    }
    running.splice(0, running.length, ...running.filter((r) => r.endMs > t));
    const health = t % 50 === 0 ? limiter.tryAcquire() : undefined;
    if (health?.allowed) health.release('success');
    for (let caller = 0; caller < askAtMs.length; caller++) {
      if ((askAtMs[caller] as number) > t) continue;
      const d = limiter.tryAcquire();
      askAtMs[caller] = d.allowed ? Number.POSITIVE_INFINITY : t + 10;
      if (d.allowed)
        running.push({ endMs: t + Math.ceil(20 * Math.max(1, limiter.inFlight / capacity)), permit: d, caller });
    }
    if (t % 500 === 499) limits.push(limiter.limit);
  }
  return limits;
}

describe('adaptive limit: a fast route next to a slow one (injected clock)', () => {
  for (const algorithm of ['gradient2', 'vegas'] as const) {
    it(`${algorithm}: health checks answered at once do not pull the limit down on a healthy service`, () => {
      // Nothing queues: every /work request takes 20 ms whatever is in flight.
      const limits = routeWithHealthChecks(algorithm, Number.POSITIVE_INFINITY, 10_000);
      assert.ok(Math.min(...limits) >= 20, `${algorithm}: ${limits.join(' ')}`);
    });

    it(`${algorithm}: with the same health checks, a real queue still shrinks the limit`, () => {
      // The service runs 5 at once; past that, latency grows with what is in flight.
      const limits = routeWithHealthChecks(algorithm, 5, 10_000);
      for (const limit of limits.slice(4)) assert.ok(limit < 20, `${algorithm}: ${limits.join(' ')}`);
    });
  }
});

describe('baseline latency', () => {
  /** Windows every 100 ms: `fastMs` until `changeMs`, then `slowMs`; answers the baseline at `atMs`. */
  const run = (changeMs: number, atMs: number, slow: (t: number) => number) => {
    const baseline = createBaselineLatency(2000, 2);
    let now = 0;
    for (let t = 0; t <= atMs; t += 100) now = baseline.update(t < changeMs ? 40 : slow(t), t);
    return now;
  };

  it('moves up one period after the service became slower for good, wherever the slowdown falls', () => {
    for (const changeMs of [1000, 2050, 3950]) {
      assert.equal(
        run(changeMs, changeMs + 1800, () => 200),
        40,
        `change at ${changeMs}: not before a period`,
      );
      assert.equal(
        run(changeMs, changeMs + 2100, () => 200),
        200,
        `change at ${changeMs}`,
      );
    }
  });

  it('stays while a queue drains (latency still falling), then moves up once it is flat', () => {
    // A limit shrinking from 4× too high: 160 ms falling to 90 ms over 2.8 s (by a quarter at 2.6 s),
    // then flat at 90 ms: the service is slower for good.
    const draining = (t: number) => Math.max(90, 160 - (t - 1000) / 40);
    assert.equal(run(1000, 4500, draining), 40, 'fell by a quarter less than a period ago: a queue');
    assert.equal(run(1000, 4700, draining), 90);
  });

  it('stays while a faster window breaks the stretch (a queue that drains now and then)', () => {
    // 200 ms but one 60 ms window a second: the service is not slower, requests queue.
    assert.equal(
      run(1000, 8000, (t) => (t % 1000 === 0 ? 60 : 200)),
      40,
    );
  });
});
