/** Synthetic traces for the simulator: steady, bursty and other arrival patterns, seeded. */
import { SluiceError } from 'sluice';
import { createSeededRandom } from './random.js';

/** One request of a trace: when it arrives (integer ms) and how many units it asks for. */
export interface TraceEvent {
  readonly atMs: number;
  readonly cost: number;
}

/** A sequence of requests to one key, sorted by arrival time. */
export interface Trace {
  /** `steady`, `bursty`, `boundary`, `poisson`, or the CSV file's name. */
  readonly name: string;
  readonly events: readonly TraceEvent[];
}

/** The generated traces, by name. */
export const TRACE_NAMES = ['steady', 'bursty', 'boundary', 'poisson'] as const;

/** The name of a generated trace. */
export type TraceName = (typeof TRACE_NAMES)[number];

/** What a generated trace is shaped by: the policy it will be run against, its length, load and seed. */
export interface TraceSettings {
  /** Requests per period of the policy under test; the traces scale with it. */
  readonly limit: number;
  readonly periodMs: number;
  /** Length of the trace. @default per trace: see DEFAULT_PERIODS */
  readonly durationMs?: number;
  /** Offered load of `steady` and `poisson`, as a multiple of the limit. @default see DEFAULT_LOAD */
  readonly load?: number;
  /** Seed of the random traces (`bursty`, `poisson`). @default 1 */
  readonly seed?: number;
}

/** Default length of each trace, in periods: long enough to show its pattern a few times. */
export const DEFAULT_PERIODS: Readonly<Record<TraceName, number>> = {
  steady: 10,
  bursty: 12,
  boundary: 9,
  poisson: 100,
};

/** Default offered load of the traces that take one (a multiple of the limit). */
export const DEFAULT_LOAD: Readonly<Record<'steady' | 'poisson', number>> = { steady: 1.5, poisson: 1 };

/** True when `name` is one of the generated traces. */
export function isTraceName(name: string): name is TraceName {
  return (TRACE_NAMES as readonly string[]).includes(name);
}

/**
 * Generates one of the built-in traces. All are deterministic for a given seed, and start at 0 so the
 * policy's windows (aligned to the epoch) line up with the chart's periods.
 *
 * - `steady`: evenly spaced requests at `load` × the limit (default 1.5×).
 * - `bursty`: light random background traffic (0.3× the limit) with a burst of 2 × limit requests in
 *   the middle of every fourth period.
 * - `boundary`: `limit` requests in the last tenth of a window and `limit` more in the first tenth of
 *   the next, every third period: the pattern that lets a fixed window admit 2 × limit in one period.
 * - `poisson`: random arrivals (exponential gaps) at `load` × the limit (default 1×): realistic traffic
 *   right at the limit, where approximate algorithms make their mistakes.
 *
 * @example const trace = generateTrace('boundary', { limit: 10, periodMs: 1000 });
 */
export function generateTrace(name: TraceName, settings: TraceSettings): Trace {
  const { limit, periodMs } = settings;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_LIMIT',
      `limit: a generated trace needs a limit of at least 1, got ${limit}`,
      {
        option: 'limit',
      },
    );
  }
  const durationMs = settings.durationMs ?? DEFAULT_PERIODS[name] * periodMs;
  const seed = settings.seed ?? 1;
  const random = createSeededRandom(seed);
  const times: number[] = [];
  switch (name) {
    case 'steady': {
      const gapMs = periodMs / (limit * loadOf(settings, DEFAULT_LOAD.steady));
      for (let k = 0; k * gapMs < durationMs; k++) times.push(Math.floor(k * gapMs));
      break;
    }
    case 'bursty': {
      poissonTimes(times, random, periodMs / (limit * 0.3), durationMs);
      const spanMs = periodMs / 20;
      for (let start = periodMs + periodMs / 2; start < durationMs; start += 4 * periodMs) {
        for (let i = 0; i < 2 * limit; i++) times.push(Math.floor(start + (i * spanMs) / (2 * limit)));
      }
      break;
    }
    case 'boundary': {
      const spanMs = periodMs / 10;
      for (let edge = periodMs; edge - spanMs < durationMs; edge += 3 * periodMs) {
        for (let i = 0; i < limit; i++) times.push(Math.floor(edge - spanMs + (i * spanMs) / limit));
        for (let i = 0; i < limit; i++) times.push(Math.floor(edge + (i * spanMs) / limit));
      }
      break;
    }
    case 'poisson':
      poissonTimes(times, random, periodMs / (limit * loadOf(settings, DEFAULT_LOAD.poisson)), durationMs);
      break;
  }
  times.sort((a, b) => a - b);
  return { name, events: times.filter((t) => t < durationMs).map((atMs) => ({ atMs, cost: 1 })) };
}

function loadOf(settings: TraceSettings, fallback: number): number {
  const load = settings.load ?? fallback;
  if (!(load > 0) || !Number.isFinite(load)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `load: expected a positive number, got ${load}`, {
      option: 'load',
    });
  }
  return load;
}

/** Appends arrivals of a Poisson process with mean gap `meanGapMs` (exponential gaps) up to `durationMs`. */
function poissonTimes(out: number[], random: () => number, meanGapMs: number, durationMs: number): void {
  // 1 - random() is in (0, 1], so the logarithm is finite.
  for (let t = -Math.log(1 - random()) * meanGapMs; t < durationMs; t += -Math.log(1 - random()) * meanGapMs) {
    out.push(Math.floor(t));
  }
}
