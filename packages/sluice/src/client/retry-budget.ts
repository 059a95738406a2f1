/**
 * A retry budget (as Finagle's and Envoy's): retries may add at most a share of the requests sent
 * over a window, plus a few for a client that sends little. Without it, every layer retrying three
 * times turns an outage into four times the load.
 */
import type { Clock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import { createRollingCounts } from './rolling-counts.js';

/** Options of the retry budget; `true` takes the defaults. */
export interface RetryBudgetOptions {
  /** Retries allowed per first attempt over the window. @default 0.1 */
  ratio?: number;
  /** Retries always allowed per window, so a quiet client can still retry. @default 10 */
  minRetries?: number;
  /** How far back requests and retries are counted, in ms. @default 10_000 */
  windowMs?: number;
}

/** The budget: spends one retry if there is one left. */
export interface RetryBudget {
  /** Counts a first attempt. */
  request(): void;
  /** Takes a retry from the budget; false when it is spent (send no retry). */
  tryRetry(): boolean;
}

const invalid = (option: string, why: string) =>
  new SluiceError('ERR_SLUICE_INVALID_OPTION', `retryBudget.${option}: ${why}`, { option: `retryBudget.${option}` });

/** Validates `retryBudget` into its resolved form (undefined when off). */
export function resolveRetryBudget(
  value: boolean | RetryBudgetOptions | undefined,
): Required<RetryBudgetOptions> | undefined {
  if (value === undefined || value === false) return undefined;
  const { ratio = 0.1, minRetries = 10, windowMs = 10_000 } = value === true ? {} : value;
  if (typeof ratio !== 'number' || !(ratio >= 0 && ratio <= 10))
    throw invalid('ratio', `${ratio} is not between 0 and 10 (0.1 = a retry per ten requests)`);
  if (!Number.isInteger(minRetries) || minRetries < 0)
    throw invalid('minRetries', `${minRetries} is not a whole number ≥ 0`);
  if (!Number.isInteger(windowMs) || windowMs < 1000)
    throw invalid('windowMs', `${windowMs} is not a whole number of ms ≥ 1000`);
  return { ratio, minRetries, windowMs };
}

/** Creates a retry budget. */
export function createRetryBudget(options: Required<RetryBudgetOptions>, clock: Clock): RetryBudget {
  const counts = createRollingCounts(['requests', 'retries'] as const, options.windowMs, clock);
  return {
    request: () => counts.add('requests'),
    tryRetry() {
      if (counts.sum('retries') >= options.minRetries + options.ratio * counts.sum('requests')) return false;
      counts.add('retries');
      return true;
    },
  };
}
