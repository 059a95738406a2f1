/**
 * Client-side adaptive throttling (Google SRE book, "Handling Overload"): when the backend accepts
 * fewer requests than it is sent, the client refuses a growing share locally, with probability
 * max(0, (requests − K·accepts) / (requests + 1)) over a window of about two minutes, so a fleet of
 * clients stops multiplying the load of an overloaded or dead backend.
 */
import type { Clock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import { createRollingCounts } from './rolling-counts.js';

/** Options of adaptive throttling; `true` takes the defaults. */
export interface AdaptiveThrottleOptions {
  /**
   * How many requests the client may send per accepted one before it refuses locally: 2 lets twice
   * what the backend accepts through (so it notices recovery), lower throttles harder. @default 2
   */
  k?: number;
  /** How far back requests and accepts are counted, in ms. @default 120_000 */
  windowMs?: number;
}

/** The throttle's state: whether to refuse the next request, and what became of those sent. */
export interface AdaptiveThrottle {
  /** Counts a request and answers whether to refuse it locally (it is counted either way). */
  refuse(): boolean;
  /** Counts a request the backend accepted (answered other than 429/503, no network error). */
  accepted(): void;
  /**
   * Takes back a request that `refuse` counted and the caller then aborted: it says nothing of the
   * backend, so it counts on neither side.
   */
  withdrawn(): void;
  /** The current refusal probability, for logs. */
  probability(): number;
}

/** Validates `adaptiveThrottle` into its resolved form (undefined when off). */
export function resolveAdaptiveThrottle(
  value: boolean | AdaptiveThrottleOptions | undefined,
): Required<AdaptiveThrottleOptions> | undefined {
  if (value === undefined || value === false) return undefined;
  const options = value === true ? {} : value;
  if (typeof options !== 'object' || options === null)
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'adaptiveThrottle: give true or { k, windowMs }', {
      option: 'adaptiveThrottle',
    });
  const { k = 2, windowMs = 120_000 } = options;
  if (typeof k !== 'number' || !(k >= 1 && k <= 100))
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `adaptiveThrottle.k: ${String(k)} is not between 1 and 100 (2 is usual; 1 refuses everything the backend refuses)`,
      { option: 'adaptiveThrottle.k' },
    );
  if (typeof windowMs !== 'number' || !Number.isInteger(windowMs) || windowMs < 1000)
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `adaptiveThrottle.windowMs: ${String(windowMs)} is not a whole number of ms ≥ 1000 (about 120000 is usual)`,
      { option: 'adaptiveThrottle.windowMs' },
    );
  return { k, windowMs };
}

/** Creates a throttle; `random` in [0, 1) decides each refusal. */
export function createAdaptiveThrottle(
  options: Required<AdaptiveThrottleOptions>,
  clock: Clock,
  random: () => number,
): AdaptiveThrottle {
  const counts = createRollingCounts(['requests', 'accepts'] as const, options.windowMs, clock);
  const probability = () => {
    const requests = counts.sum('requests');
    return Math.max(0, (requests - options.k * counts.sum('accepts')) / (requests + 1));
  };
  return {
    refuse() {
      const p = probability();
      counts.add('requests');
      return random() < p;
    },
    accepted: () => counts.add('accepts'),
    // Taken from the current bucket: the request may sit in an older one, so for at most a twentieth
    // of the window (when that one expires first) the window counts one request fewer.
    withdrawn: () => counts.add('requests', -1),
    probability,
  };
}
