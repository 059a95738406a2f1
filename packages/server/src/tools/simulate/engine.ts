/** The simulator: runs a trace through each algorithm on a virtual clock, on the memory store, and compares them. */
import {
  type AlgorithmName,
  createLimiter,
  createManualClock,
  createMemoryStore,
  isBucketAlgorithm,
  type ResolvedPolicy,
  SluiceError,
} from 'sluice';
import type { Trace } from './trace.js';
import { createWindowCounter } from './window-counter.js';

/** What to simulate: one trace, one policy, several algorithms. */
export interface SimulationOptions {
  readonly trace: Trace;
  readonly algorithms: readonly AlgorithmName[];
  readonly limit: number;
  readonly periodMs: number;
  /** Capacity of the bucket algorithms (ignored by the window ones). @default limit */
  readonly burst?: number;
  /** Called every few thousand requests, for progress on long traces. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** How an approximate algorithm's decisions compare with an exact sliding log's. */
export interface ExactComparison {
  /** Requests decided. */
  readonly total: number;
  /** Admitted, though the exact log of the admitted requests says the period was already full. */
  readonly wronglyAllowed: number;
  /** Rejected, though the exact log says there was room. */
  readonly wronglyRejected: number;
  /** (wronglyAllowed + wronglyRejected) / total. */
  readonly errorRate: number;
}

/** The outcome of one algorithm on the trace. */
export interface AlgorithmRun {
  readonly algorithm: AlgorithmName;
  readonly policy: ResolvedPolicy;
  /** 1 where the request at that index of the trace was admitted, 0 where it was rejected. */
  readonly allowed: Uint8Array;
  /** Leaky bucket: how long each admitted request is held before its turn (ms); empty otherwise. */
  readonly delaysMs: Float64Array;
  /** Requests admitted. */
  readonly admitted: number;
  /** Requests rejected. */
  readonly rejected: number;
  /** The most units admitted in any window `(t - period, t]`, and the `t` it first happened at. */
  readonly peak: { readonly units: number; readonly atMs: number };
  /** Leaky bucket only: the peak counted when requests leave the queue (arrival + delayMs). */
  readonly shapedPeak?: { readonly units: number; readonly atMs: number };
  /** Sliding window only: its decisions checked against an exact sliding log of the same admissions. */
  readonly exact?: ExactComparison;
}

/** The outcome of a simulation: one run per algorithm, in the order asked. */
export interface SimulationResult {
  readonly trace: Trace;
  readonly limit: number;
  readonly periodMs: number;
  readonly burst: number;
  readonly runs: readonly AlgorithmRun[];
}

const PROGRESS_EVERY = 20_000;

/**
 * Runs the trace through each algorithm on the memory store, with simulated time: a manual clock set to
 * each request's arrival, so a year of traffic takes as long as the arithmetic. Each algorithm gets its
 * own store, so they never share counters.
 *
 * @example
 * const result = simulate({ trace: generateTrace('boundary', { limit: 10, periodMs: 1000 }),
 *   algorithms: ['fixed-window', 'sliding-log'], limit: 10, periodMs: 1000 });
 * result.runs[0].peak.units; // 20: the fixed window admits 2 × limit across a boundary
 */
export function simulate(options: SimulationOptions): SimulationResult {
  const { trace, algorithms, limit, periodMs } = options;
  if (algorithms.length === 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'algorithms: name at least one algorithm', {
      option: 'algorithms',
    });
  }
  const burst = options.burst ?? limit;
  const total = trace.events.length * algorithms.length;
  let done = 0;
  const runs = algorithms.map((algorithm) => {
    const run = runOne(options, algorithm, burst, (n) => {
      done += n;
      options.onProgress?.(done, total);
    });
    return run;
  });
  return { trace, limit, periodMs, burst, runs };
}

function runOne(
  options: SimulationOptions,
  algorithm: AlgorithmName,
  burst: number,
  progress: (n: number) => void,
): AlgorithmRun {
  const { trace, limit, periodMs } = options;
  const events = trace.events;
  const clock = createManualClock(events[0]?.atMs ?? 0);
  const store = createMemoryStore({ sweepIntervalMs: 0 });
  const limiter = createLimiter({
    algorithm,
    limit,
    period: periodMs,
    ...(isBucketAlgorithm(algorithm) && options.burst !== undefined ? { burst } : {}),
    store,
    clock,
  });
  const allowed = new Uint8Array(events.length);
  const shaping = algorithm === 'leaky-bucket';
  const delaysMs = new Float64Array(shaping ? events.length : 0);
  const admittedLog = createWindowCounter(periodMs);
  const compare = algorithm === 'sliding-window';
  let wronglyAllowed = 0;
  let wronglyRejected = 0;
  let admitted = 0;
  let peak = { units: 0, atMs: 0 };
  for (let i = 0; i < events.length; i++) {
    const { atMs, cost } = events[i] as (typeof events)[number];
    clock.set(atMs);
    admittedLog.advance(atMs);
    // What an exact sliding log would say, given the same admitted history: one decision compared at
    // a time, so one early difference is not counted again in every decision after it.
    const exactAllows = compare ? cost <= limit && admittedLog.units() + cost <= limit : false;
    const decision = limiter.checkSync('sim', { cost });
    if (decision.allowed) {
      allowed[i] = 1;
      admitted++;
      admittedLog.add(atMs, cost);
      if (admittedLog.units() > peak.units) peak = { units: admittedLog.units(), atMs };
      if (shaping) delaysMs[i] = decision.delayMs ?? 0;
    }
    if (compare && decision.allowed !== exactAllows) {
      if (decision.allowed) wronglyAllowed++;
      else wronglyRejected++;
    }
    if ((i + 1) % PROGRESS_EVERY === 0) progress(PROGRESS_EVERY);
  }
  progress(events.length % PROGRESS_EVERY);
  void store.close();
  const run: AlgorithmRun = {
    algorithm,
    policy: limiter.limits[0]?.policy as ResolvedPolicy,
    allowed,
    delaysMs,
    admitted,
    rejected: events.length - admitted,
    peak,
    ...(shaping ? { shapedPeak: shapedPeakOf(trace, allowed, delaysMs, periodMs) } : {}),
    ...(compare
      ? {
          exact: {
            total: events.length,
            wronglyAllowed,
            wronglyRejected,
            errorRate: events.length === 0 ? 0 : (wronglyAllowed + wronglyRejected) / events.length,
          },
        }
      : {}),
  };
  return run;
}

/** The peak of a shaped (leaky bucket) run, counting each request when it leaves the queue. */
function shapedPeakOf(
  trace: Trace,
  allowed: Uint8Array,
  delaysMs: Float64Array,
  periodMs: number,
): { units: number; atMs: number } {
  const released = releasedEvents(trace, allowed, delaysMs);
  const counter = createWindowCounter(periodMs);
  let peak = { units: 0, atMs: 0 };
  for (const { atMs, cost } of released) {
    counter.advance(atMs);
    counter.add(atMs, cost);
    if (counter.units() > peak.units) peak = { units: counter.units(), atMs };
  }
  return peak;
}

/** The admitted requests of a shaped run at the time they leave the queue, in order. */
export function releasedEvents(
  trace: Trace,
  allowed: Uint8Array,
  delaysMs: Float64Array,
): { atMs: number; cost: number }[] {
  const out: { atMs: number; cost: number }[] = [];
  trace.events.forEach((e, i) => {
    if (allowed[i] === 1) out.push({ atMs: e.atMs + (delaysMs[i] ?? 0), cost: e.cost });
  });
  return out.sort((a, b) => a.atMs - b.atMs);
}
