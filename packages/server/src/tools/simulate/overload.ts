/**
 * `sluice simulate --overload`: a model service (a capacity of requests at once, latency growing with
 * the queue past it, the service time rising mid-run) under a load, in front of no limiter, a fixed
 * concurrency limit and each adaptive algorithm, on simulated time; what each let through.
 */

import { createManualClock } from 'sluice';
import { type AdaptiveLimiter, createAdaptiveLimiter, type SimulationPoint, simulateService } from 'sluice/adaptive';

/** Options of {@link simulateOverload}. */
export interface OverloadOptions {
  /** Requests the service runs at once at full speed. */
  capacity: number;
  /** Time of one request, unqueued, in ms. */
  serviceMs: number;
  /** Offered load as a multiple of the capacity. */
  load: number;
  /** Factor the service time is multiplied by half way through. */
  slowdown: number;
  durationMs: number;
  /** Share of requests that are critical. */
  critical: number;
  /** The fixed limit and the adaptive limits' initial value. */
  initialLimit: number;
}

/** One row: a limiter's totals and its limit over time. */
export interface OverloadRow {
  name: string;
  /** Finished within the deadline, per second, as a share of the capacity, before and after the change. */
  goodput: [number, number];
  /** Share of critical requests that finished within the deadline, before and after the change. */
  criticalOk: [number, number];
  /** ms after the change until the limit stays within 25 % of where it ends; undefined if it never does. */
  settleMs: number | undefined;
  timeline: SimulationPoint[];
}

const ROWS: {
  name: string;
  make: (o: OverloadOptions, clock: ReturnType<typeof createManualClock>) => AdaptiveLimiter;
}[] = [
  {
    name: 'no limiter',
    make: (o, clock) =>
      createAdaptiveLimiter({ initialLimit: 1e6, minLimit: 1e6, maxLimit: 1e6, ...priorities(o), clock }),
  },
  {
    name: 'fixed concurrency',
    make: (o, clock) =>
      createAdaptiveLimiter({
        initialLimit: o.initialLimit,
        minLimit: o.initialLimit,
        maxLimit: o.initialLimit,
        ...priorities(o),
        clock,
      }),
  },
  ...(['gradient2', 'vegas', 'aimd'] as const).map((algorithm) => ({
    name: algorithm,
    make: (o: OverloadOptions, clock: ReturnType<typeof createManualClock>) =>
      createAdaptiveLimiter({ algorithm, initialLimit: o.initialLimit, maxLimit: 100_000, ...priorities(o), clock }),
  })),
];

/** Half the limit guaranteed to critical requests (when there are any), half to the rest. */
function priorities(o: OverloadOptions) {
  return o.critical > 0 ? { priorities: { critical: 0.5, normal: 0.5 } } : {};
}

function settle(timeline: SimulationPoint[], fromMs: number): number | undefined {
  const after = timeline.filter((p) => p.atMs >= fromMs);
  const tail = after.slice(-Math.max(1, Math.floor(after.length / 5))).map((p) => p.limit);
  const final = tail.reduce((a, b) => a + b, 0) / tail.length;
  let settled: number | undefined;
  for (const p of after) {
    if (Math.abs(p.limit - final) > 0.25 * final) settled = undefined;
    else settled ??= p.atMs - fromMs;
  }
  return settled;
}

/** Runs every row; deterministic (no randomness, simulated time). */
export function simulateOverload(o: OverloadOptions): OverloadRow[] {
  const half = Math.floor(o.durationMs / 2);
  const offeredPerMs = (o.load * o.capacity) / o.serviceMs;
  return ROWS.map((row) => {
    const clock = createManualClock(0);
    const limiter = row.make(o, clock);
    const phase = (serviceMs: number, durationMs: number) => ({
      durationMs,
      capacity: o.capacity,
      serviceMs,
      offeredPerMs,
    });
    // Goodput is measured per phase: run each half as its own simulation on the same limiter and clock.
    const mix = o.critical > 0 ? { critical: o.critical, normal: 1 - o.critical } : undefined;
    const common = {
      clock,
      deadlineMs: 10 * o.serviceMs,
      sampleEveryMs: Math.max(1, Math.floor(o.durationMs / 200)),
      ...(mix ? { mix } : {}),
    };
    const before = simulateService(limiter, { ...common, phases: [phase(o.serviceMs, half)] });
    const after = simulateService(limiter, {
      ...common,
      phases: [phase(o.serviceMs * o.slowdown, o.durationMs - half)],
    });
    const good = (r: typeof before) => Object.values(r.good).reduce((a, b) => a + b, 0);
    const capacityPerMs = (serviceMs: number) => o.capacity / serviceMs;
    const timeline = [...before.timeline, ...after.timeline.map((p) => ({ ...p, atMs: p.atMs + half }))];
    const critical = (r: typeof before) => (r.good.critical ?? 0) / (r.offered.critical ?? Number.NaN);
    return {
      name: row.name,
      goodput: [
        good(before) / half / capacityPerMs(o.serviceMs),
        good(after) / (o.durationMs - half) / capacityPerMs(o.serviceMs * o.slowdown),
      ],
      criticalOk: [critical(before), critical(after)],
      settleMs: row.name === 'no limiter' ? undefined : settle(timeline, half),
      timeline,
    };
  });
}
