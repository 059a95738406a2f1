/**
 * Policies: what a user writes (a limit per period, an algorithm, a burst) validated once into the integer form the
 * algorithms compute in, where a request is a whole number of ticks so bucket arithmetic never drifts.
 */
import type { Duration } from './duration.js';
import { parseDuration } from './duration.js';
import { optionError, SluiceError } from './errors.js';

/** The six algorithms, by their config names. */
export const ALGORITHMS = [
  'fixed-window',
  'sliding-log',
  'sliding-window',
  'token-bucket',
  'leaky-bucket',
  'gcra',
] as const;

/** One of the six algorithms. */
export type AlgorithmName = (typeof ALGORITHMS)[number];

/** What a user writes: a limit of `limit` requests per `period`, with an algorithm and an optional burst. */
export interface PolicyOptions {
  /** @default 'fixed-window' */
  algorithm?: AlgorithmName;
  /** Requests allowed per period. 0 blocks every request. */
  limit: number;
  /** The period, in ms or as a duration string (`'1m'`). */
  period: Duration;
  /** Bucket capacity for `token-bucket`, `leaky-bucket` and `gcra`. @default limit */
  burst?: number;
  /** Once a key is rejected, keep rejecting it for this long (brute-force protection). @default 0 */
  blockDuration?: Duration;
}

/**
 * A validated policy, in the integer units the algorithms compute in.
 *
 * Bucket algorithms (token bucket, leaky bucket, GCRA) count in *ticks*: one millisecond is `scale`
 * ticks and one request is `intervalTicks` ticks, chosen so both are integers (`intervalTicks / scale
 * = periodMs / limit` exactly, whenever `scale` stays small). Integer ticks cannot drift, which is why a
 * token bucket and a GCRA with the same policy make identical decisions on every trace, and why the
 * Redis scripts (Lua numbers are doubles) agree with the memory store bit for bit.
 */
export interface ResolvedPolicy {
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly periodMs: number;
  /** Capacity of the bucket: `burst` for bucket algorithms, `limit` for window algorithms; 0 when limit is 0. */
  readonly capacity: number;
  /** Explicit burst (bucket algorithms), or `limit`. */
  readonly burst: number;
  readonly blockMs: number;
  /** Ticks per millisecond (bucket algorithms). */
  readonly scale: number;
  /** Ticks per request: the GCRA emission interval. */
  readonly intervalTicks: number;
  /** `capacity * intervalTicks`: the GCRA tolerance / the bucket size in ticks. */
  readonly capacityTicks: number;
  /** A short stable name of the policy, used to keep counters of different policies apart in a store. */
  readonly id: string;
}

/** Largest ticks-per-ms so that `now * scale` stays an exact double until past the year 2100. */
export const MAX_SCALE = 1500;
/** Limits and bursts above this are rejected as misconfiguration (and keep tick arithmetic exact). */
export const MAX_LIMIT = 1_000_000_000;
/** Largest limit × period (or bucket size in ticks) accepted: keeps sums with `now * scale` below 2^53. */
export const MAX_MAGNITUDE = 2 ** 50;
/** The longest period accepted: 10 years. Also the longest `blockDuration`. */
export const MAX_PERIOD_MS = 10 * 366 * 86_400_000;
/**
 * The largest limit of a sliding log. A log keeps one (time, units) pair — 16 bytes in memory, 8 in
 * Redis, whose 16-bit units field this bound keeps (stores/redis/lua-macros.ts) — per admitted request
 * still in its window, so its memory per key is O(limit): 10,000 is at most 160 KB per key. Larger
 * limits are refused (`ERR_SLUICE_SLIDING_LOG_TOO_LARGE`); the sliding window counter keeps two counts
 * per key whatever the limit, within about 1% of the exact log.
 */
export const MAX_SLIDING_LOG_LIMIT = 10_000;

const BUCKET_ALGORITHMS: ReadonlySet<AlgorithmName> = new Set(['token-bucket', 'leaky-bucket', 'gcra']);
const POLICY_KEYS = new Set(['algorithm', 'limit', 'period', 'burst', 'blockDuration']);

/** True for the algorithms that take a `burst`. */
export function isBucketAlgorithm(algorithm: AlgorithmName): boolean {
  return BUCKET_ALGORITHMS.has(algorithm);
}

/** True when `name` is one of the six algorithm names. */
export function isAlgorithmName(name: unknown): name is AlgorithmName {
  return typeof name === 'string' && (ALGORITHMS as readonly string[]).includes(name);
}

/**
 * Validates policy options into a ResolvedPolicy. `path` prefixes option names in error messages
 * (e.g. `limits[1].`), so the error says exactly which option is wrong.
 *
 * @param extraKeys - other option names the caller accepts alongside the policy (not reported as unknown).
 */
export function resolvePolicy(
  options: PolicyOptions,
  path = '',
  extraKeys: ReadonlySet<string> = new Set(),
): ResolvedPolicy {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${path || 'options'}: expected an object`);
  }
  checkKnownKeys(options, path, extraKeys);
  const algorithm = options.algorithm ?? 'fixed-window';
  if (!isAlgorithmName(algorithm)) {
    throw optionError(
      `${path}algorithm`,
      `'${String(algorithm)}' is not an algorithm; use one of ${ALGORITHMS.join(', ')}`,
      'ERR_SLUICE_INVALID_ALGORITHM',
    );
  }
  const { limit } = options;
  if (!isCount(limit, 0)) {
    throw optionError(
      `${path}limit`,
      `${String(limit)} is not a whole number between 0 and ${MAX_LIMIT}`,
      'ERR_SLUICE_INVALID_LIMIT',
    );
  }
  const periodMs = periodOf(options.period, path);
  const burst = options.burst === undefined ? limit : checkBurst(options.burst, algorithm, path);
  if (algorithm === 'sliding-log' && limit > MAX_SLIDING_LOG_LIMIT) {
    throw optionError(
      `${path}limit`,
      `a sliding log keeps one entry per admitted request (up to 16 bytes each, per key), so it takes a limit of at most ${MAX_SLIDING_LOG_LIMIT}, not ${limit}; use algorithm 'sliding-window' (two counters per key, within about 1% of exact)`,
      'ERR_SLUICE_SLIDING_LOG_TOO_LARGE',
    );
  }
  const blockMs =
    options.blockDuration === undefined ? 0 : parseDuration(options.blockDuration, `${path}blockDuration`);
  // The block lives in the store (with a TTL) for this long.
  if (blockMs > MAX_PERIOD_MS) {
    throw optionError(`${path}blockDuration`, `at most 10 years, got ${blockMs} ms`, 'ERR_SLUICE_INVALID_BLOCK');
  }
  const capacity = limit === 0 ? 0 : burst;
  const { scale, intervalTicks } = ticksFor(limit, periodMs);
  const capacityTicks = capacity * intervalTicks;
  // Every intermediate stays an exact double (see ResolvedPolicy): the bucket size in ticks, and counts × period for
  // the sliding window's weighted estimate. Fixed windows and logs only count.
  const magnitude = isBucketAlgorithm(algorithm)
    ? capacityTicks
    : algorithm === 'sliding-window'
      ? limit * periodMs
      : 0;
  const explicitBurst = burst !== limit;
  if (magnitude > MAX_MAGNITUDE) {
    throw optionError(
      `${path}limit`,
      `${limit} per ${periodMs} ms${explicitBurst ? ` with burst ${burst}` : ''} is too large to count exactly; use a shorter period or a smaller limit`,
      'ERR_SLUICE_INVALID_LIMIT',
    );
  }
  const id = `${ALGORITHM_IDS[algorithm]}${limit}/${periodMs}${explicitBurst ? `b${burst}` : ''}`;
  return { algorithm, limit, periodMs, capacity, burst, blockMs, scale, intervalTicks, capacityTicks, id };
}

/** Every option is a policy option or one the caller accepts alongside (`extraKeys`). */
function checkKnownKeys(options: PolicyOptions, path: string, extraKeys: ReadonlySet<string>): void {
  for (const key of Object.keys(options)) {
    if (!POLICY_KEYS.has(key) && !extraKeys.has(key)) {
      throw optionError(
        path + key,
        `unknown option (known: ${[...POLICY_KEYS, ...extraKeys].join(', ')})`,
        'ERR_SLUICE_UNKNOWN_OPTION',
      );
    }
  }
}

/** True for a whole number from `min` to MAX_LIMIT: a limit or a burst. */
function isCount(n: unknown, min: number): n is number {
  return Number.isInteger(n) && (n as number) >= min && (n as number) <= MAX_LIMIT;
}

/** The period in ms: required, from 1 ms to 10 years. */
function periodOf(period: Duration | undefined, path: string): number {
  if (period === undefined) {
    throw optionError(`${path}period`, "required (e.g. '1m' or 60000)", 'ERR_SLUICE_INVALID_PERIOD');
  }
  const periodMs = parseDuration(period, `${path}period`);
  if (periodMs < 1 || periodMs > MAX_PERIOD_MS) {
    throw optionError(
      `${path}period`,
      `must be at least 1 ms and at most 10 years, got ${periodMs} ms`,
      'ERR_SLUICE_INVALID_PERIOD',
    );
  }
  return periodMs;
}

/** A burst given with the policy: a whole number ≥ 1, for a bucket algorithm only. */
function checkBurst(burst: unknown, algorithm: AlgorithmName, path: string): number {
  if (!isBucketAlgorithm(algorithm)) {
    throw optionError(
      `${path}burst`,
      `only token-bucket, leaky-bucket and gcra take a burst, not ${algorithm}`,
      'ERR_SLUICE_INVALID_BURST',
    );
  }
  if (!isCount(burst, 1)) {
    throw optionError(
      `${path}burst`,
      `${String(burst)} is not a whole number between 1 and ${MAX_LIMIT}`,
      'ERR_SLUICE_INVALID_BURST',
    );
  }
  return burst;
}

const ALGORITHM_IDS: Record<AlgorithmName, string> = {
  'fixed-window': 'fw',
  'sliding-log': 'sl',
  'sliding-window': 'sw',
  'token-bucket': 'tb',
  'leaky-bucket': 'lb',
  gcra: 'gc',
};

/**
 * Picks the smallest tick size that makes the emission interval (`periodMs / limit` ms) a whole number
 * of ticks. When that would need more than MAX_SCALE ticks per ms (a large limit that shares no factor
 * with the period), the interval is rounded to the nearest 1/MAX_SCALE ms — a rate error below
 * 1/(2·MAX_SCALE·interval), far under one request per period for any realistic policy.
 */
export function ticksFor(limit: number, periodMs: number): { scale: number; intervalTicks: number } {
  if (limit === 0) return { scale: 1, intervalTicks: periodMs };
  const exactScale = limit / gcd(limit, periodMs);
  if (exactScale <= MAX_SCALE) return { scale: exactScale, intervalTicks: (periodMs * exactScale) / limit };
  return { scale: MAX_SCALE, intervalTicks: Math.max(1, Math.round((periodMs * MAX_SCALE) / limit)) };
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
