/**
 * A deterministic model of a service under load, on a manual clock: used by the convergence tests
 * and by `sluice simulate --overload`. Capacity `capacity` concurrent requests of `serviceMs` each;
 * past that, each request waits its turn (latency grows with the number in flight).
 */
import type { ManualClock } from '../core/clock.js';
import type { AdaptiveLimiter } from './create-adaptive-limiter.js';
import type { AdaptivePermit } from './decision.js';

/** One phase of a simulated run. */
export interface ServicePhase {
  /** How long the phase lasts, in ms. */
  durationMs: number;
  /** Concurrent requests the service serves at full speed. */
  capacity: number;
  /** Time of one request when not queued, in ms. */
  serviceMs: number;
  /** Requests offered per ms, spread over the priorities by `mix`. */
  offeredPerMs: number;
}

/** A point of the run's timeline, every `sampleEveryMs`. */
export interface SimulationPoint {
  atMs: number;
  limit: number;
  inFlight: number;
}

/** Totals of one run, per priority. */
export interface SimulationResult {
  timeline: SimulationPoint[];
  offered: Record<string, number>;
  admitted: Record<string, number>;
  /** Admitted requests that finished within `deadlineMs`. */
  good: Record<string, number>;
}

/** Options of `simulateService`. */
export interface SimulationOptions {
  clock: ManualClock;
  phases: ServicePhase[];
  /** Share of the offered requests of each priority (by name); the rest go to the last priority. */
  mix?: Record<string, number>;
  /** A request slower than this counts as failed and is released `dropped`. @default 10 × serviceMs */
  deadlineMs?: number;
  sampleEveryMs?: number;
}

/**
 * Runs `limiter` in front of the model service, ms by ms, and answers what each priority got.
 * Deterministic: arrivals are spread evenly, no randomness.
 */
export function simulateService(limiter: AdaptiveLimiter, options: SimulationOptions): SimulationResult {
  const { clock, phases } = options;
  const names = limiter.priorities;
  const zero = () => Object.fromEntries(names.map((n) => [n, 0])) as Record<string, number>;
  const result: SimulationResult = { timeline: [], offered: zero(), admitted: zero(), good: zero() };
  const running: { endMs: number; permit: AdaptivePermit; slow: boolean }[] = [];
  const mix = names.map((n, i) => options.mix?.[n] ?? (i === names.length - 1 ? 1 : 0));
  const credit = names.map(() => 0);
  const start = clock.now();
  let t = 0;
  for (const phase of phases) {
    const deadlineMs = options.deadlineMs ?? 10 * phase.serviceMs;
    for (const end = t + phase.durationMs; t < end; t++) {
      clock.set(start + t);
      for (let k = running.length - 1; k >= 0; k--) {
        const r = running[k] as (typeof running)[number];
        if (r.endMs > t) continue;
        running.splice(k, 1);
        r.permit.release(r.slow ? 'dropped' : 'success');
        if (!r.slow) result.good[r.permit.priority] = (result.good[r.permit.priority] as number) + 1;
      }
      names.forEach((name, i) => {
        credit[i] = (credit[i] as number) + phase.offeredPerMs * (mix[i] as number);
        for (; (credit[i] as number) >= 1; credit[i] = (credit[i] as number) - 1) {
          result.offered[name] = (result.offered[name] as number) + 1;
          const d = limiter.tryAcquire({ priority: name });
          if (!d.allowed) continue;
          result.admitted[name] = (result.admitted[name] as number) + 1;
          const latency = phase.serviceMs * Math.max(1, limiter.inFlight / phase.capacity);
          const slow = latency > deadlineMs;
          running.push({ endMs: t + Math.ceil(Math.min(latency, deadlineMs)), permit: d, slow });
        }
      });
      if (t % (options.sampleEveryMs ?? 100) === 0)
        result.timeline.push({ atMs: t, limit: limiter.limit, inFlight: limiter.inFlight });
    }
  }
  for (const r of running) r.permit.release('ignore');
  return result;
}
