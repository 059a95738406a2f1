/**
 * The options of `createAdaptiveLimiter`, validated once into a resolved form; every problem is a
 * SluiceError with a code and a message that says what to write instead.
 */
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { optionError } from '../core/errors.js';
import { type AimdOptions, createAimd } from './aimd.js';
import { createGradient2, type Gradient2Options } from './gradient2.js';
import type { AdaptiveAlgorithmName, LimitAlgorithm } from './limit-algorithm.js';
import { createVegas, type VegasOptions } from './vegas.js';

/** A bounded wait for a place instead of an immediate rejection. */
export interface AdaptiveQueueOptions {
  /** Most requests waiting at once, all priorities together. */
  size: number;
  /** How long a request may wait before it is rejected. @default 1000 */
  timeoutMs?: number;
}

/** Options of `createAdaptiveLimiter`. */
export interface AdaptiveLimiterOptions {
  /** How the limit follows the measured latency. @default 'gradient2' */
  algorithm?: AdaptiveAlgorithmName;
  /** The limit before anything was measured. @default 20 */
  initialLimit?: number;
  /** The limit never goes below this. @default 1 */
  minLimit?: number;
  /** The limit never goes above this. @default 1000 */
  maxLimit?: number;
  /**
   * Guaranteed shares of the limit by priority, most important first (e.g. `{ critical: 0.5, normal:
   * 0.3, batch: 0.2 }`); shares add up to at most 1. A priority may borrow what the others leave
   * unused; the last is shed first. @default { default: 1 }
   */
  priorities?: Record<string, number>;
  /** Wait for a place (bounded) instead of rejecting at once. @default no queue */
  queue?: AdaptiveQueueOptions;
  /** Per-algorithm tuning; the defaults suit most services. */
  aimd?: AimdOptions;
  vegas?: VegasOptions;
  gradient2?: Gradient2Options;
  /** Where time is read (latency and demand); injected in tests. @default the system clock */
  clock?: Clock;
}

/** The options after validation. */
export interface ResolvedAdaptiveOptions {
  algorithm: AdaptiveAlgorithmName;
  initialLimit: number;
  minLimit: number;
  maxLimit: number;
  /** Priority names, most important first, and their shares in the same order. */
  names: string[];
  shares: number[];
  queue: { size: number; timeoutMs: number } | undefined;
  clock: Clock;
}

/** The built-in algorithms by name, each made with its own tuning. */
export const ALGORITHMS: Record<AdaptiveAlgorithmName, (options: AdaptiveLimiterOptions) => LimitAlgorithm> = {
  gradient2: (options) => createGradient2(options.gradient2),
  vegas: (options) => createVegas(options.vegas),
  aimd: (options) => createAimd(options.aimd),
};
/** Every option, in the order the unknown-option message lists them. */
const KNOWN = [
  'algorithm',
  'initialLimit',
  'minLimit',
  'maxLimit',
  'priorities',
  'queue',
  'aimd',
  'vegas',
  'gradient2',
  'clock',
];

const invalid = (option: string, why: string) => optionError(option, why, 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION');

function wholeNumber(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000_000)
    throw invalid(option, `${String(value)} is not a whole number between 1 and 1000000`);
  return value;
}

function resolvePriorities(priorities: Record<string, number> | undefined): { names: string[]; shares: number[] } {
  if (priorities === undefined) return { names: ['default'], shares: [1] };
  if (typeof priorities !== 'object' || priorities === null)
    throw invalid('priorities', 'give an object of shares, e.g. { critical: 0.5, normal: 0.3, batch: 0.2 }');
  const names = Object.keys(priorities);
  if (names.length === 0 || names.length > 16) throw invalid('priorities', 'give between 1 and 16 priorities');
  const shares = names.map((name) => {
    const share = priorities[name];
    if (typeof share !== 'number' || !(share >= 0 && share <= 1))
      throw invalid(`priorities.${name}`, `${String(share)} is not a share between 0 and 1`);
    return share;
  });
  const total = shares.reduce((a, b) => a + b, 0);
  if (total > 1 + 1e-9)
    throw invalid('priorities', `the shares add up to ${total.toFixed(3)}; they are shares of one limit, at most 1`);
  return { names, shares };
}

/** Throws ERR_SLUICE_UNKNOWN_OPTION for a key of `object` (the option `name`) that is not in `known`. */
function onlyKnown(object: object, name: string, known: readonly string[]): void {
  for (const key of Object.keys(object))
    if (!known.includes(key))
      throw optionError(
        `${name}.${key}`,
        `not an option of ${name} (known: ${known.join(', ')})`,
        'ERR_SLUICE_UNKNOWN_OPTION',
      );
}

/** Each algorithm's tuning: what every number must be, and how to say so. */
const TUNING: Record<AdaptiveAlgorithmName, Record<string, [ok: (value: number) => boolean, what: string]>> = {
  aimd: {
    backoffRatio: [(v) => v > 0 && v < 1, 'a ratio between 0 and 1 (exclusive), e.g. 0.9'],
    latencyBoundMs: [(v) => v > 0 && v < Number.POSITIVE_INFINITY, 'a positive number of milliseconds'],
  },
  vegas: {
    baselineMs: [(v) => v > 0 && v < Number.POSITIVE_INFINITY, 'a positive number of milliseconds'],
  },
  gradient2: {
    // Below 1, latency at its very baseline would already shrink the limit.
    tolerance: [(v) => v >= 1 && v < Number.POSITIVE_INFINITY, 'a factor of at least 1, e.g. 1.5'],
    baselineMs: [(v) => v > 0 && v < Number.POSITIVE_INFINITY, 'a positive number of milliseconds'],
    smoothing: [(v) => v > 0 && v <= 1, 'a share above 0 and at most 1, e.g. 0.2'],
  },
};

/** Checks one algorithm's tuning object (absent is fine: the defaults apply). */
function checkTuning(name: AdaptiveAlgorithmName, tuning: unknown): void {
  if (tuning === undefined) return;
  const rules = TUNING[name];
  const known = Object.keys(rules);
  if (typeof tuning !== 'object' || tuning === null || Array.isArray(tuning))
    throw invalid(name, `give an object of tuning (${known.join(', ')}), or leave it out for the defaults`);
  onlyKnown(tuning, name, known);
  for (const [key, value] of Object.entries(tuning)) {
    const [ok, what] = rules[key] as [(value: number) => boolean, string];
    if (value !== undefined && !(typeof value === 'number' && ok(value)))
      throw invalid(`${name}.${key}`, `${String(value)} is not ${what}`);
  }
}

function resolveQueue(queue: AdaptiveQueueOptions | undefined): ResolvedAdaptiveOptions['queue'] {
  if (queue === undefined) return undefined;
  if (typeof queue !== 'object' || queue === null) throw invalid('queue', 'give { size, timeoutMs }');
  onlyKnown(queue, 'queue', ['size', 'timeoutMs']);
  return {
    size: wholeNumber(queue.size, 'queue.size'),
    timeoutMs: wholeNumber(queue.timeoutMs ?? 1000, 'queue.timeoutMs'),
  };
}

/** Validates the options of `createAdaptiveLimiter`; throws ERR_SLUICE_ADAPTIVE_INVALID_OPTION. */
export function resolveAdaptiveOptions(options: AdaptiveLimiterOptions = {}): ResolvedAdaptiveOptions {
  for (const key of Object.keys(options))
    if (!KNOWN.includes(key))
      throw optionError(
        key,
        `not an option of createAdaptiveLimiter (known: ${KNOWN.join(', ')})`,
        'ERR_SLUICE_UNKNOWN_OPTION',
      );
  const algorithm = options.algorithm ?? 'gradient2';
  if (!Object.hasOwn(ALGORITHMS, algorithm))
    throw invalid('algorithm', `'${String(algorithm)}' is not one of ${Object.keys(ALGORITHMS).join(', ')}`);
  for (const name of Object.keys(TUNING) as AdaptiveAlgorithmName[]) checkTuning(name, options[name]);
  const minLimit = wholeNumber(options.minLimit ?? 1, 'minLimit');
  const maxLimit = wholeNumber(options.maxLimit ?? 1000, 'maxLimit');
  if (minLimit > maxLimit) throw invalid('minLimit', `${minLimit} is above maxLimit (${maxLimit}); swap them`);
  const initialLimit = wholeNumber(options.initialLimit ?? Math.min(Math.max(20, minLimit), maxLimit), 'initialLimit');
  if (initialLimit < minLimit || initialLimit > maxLimit)
    throw invalid('initialLimit', `${initialLimit} is outside minLimit..maxLimit (${minLimit}..${maxLimit})`);
  return {
    algorithm,
    initialLimit,
    minLimit,
    maxLimit,
    ...resolvePriorities(options.priorities),
    queue: resolveQueue(options.queue),
    clock: options.clock ?? systemClock,
  };
}
