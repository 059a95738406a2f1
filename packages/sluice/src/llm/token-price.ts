/**
 * The `cost` limit of a token limiter: a budget in money (or any unit) priced from a request's tokens —
 * per-token prices or a function of the usage — rounded up to whole units.
 */

import { SluiceError } from '../core/errors.js';
import type { PolicyOptions } from '../core/policy.js';
import type { Usage } from './usage.js';

/** Prices per token, in the cost limit's unit (e.g. micro-dollars: $3 per million tokens is 3). */
export interface TokenPrices {
  inputTokens: number;
  outputTokens: number;
}

/** The `cost` option: an ordinary limit plus how a request's usage is priced in its unit. */
export interface CostLimitOptions extends PolicyOptions {
  /** Per-token prices, or a function of the usage (whole units or not: the charge is rounded up). */
  price: TokenPrices | ((usage: Usage) => number);
}

/** The largest cost a request may be charged: where sums of whole numbers stay exact. */
export const MAX_COST = Number.MAX_SAFE_INTEGER;

function fail(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `cost.price: ${message}`, { option: 'cost.price' });
}

const finitePrice = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/**
 * The pricing function of a `cost` option, checked once. It returns the whole units a usage costs, or
 * a message when a user function answered something that cannot be a cost (negative, NaN, infinite).
 */
export function createPricing(price: CostLimitOptions['price'] | undefined): (usage: Usage) => number | string {
  if (typeof price === 'function')
    return (usage) => {
      const n = price(usage);
      if (typeof n !== 'number' || !Number.isFinite(n) || n < 0)
        return `cost.price returned ${String(n)} for ${JSON.stringify(usage)}: a cost must be a finite number ≥ 0`;
      return Math.min(Math.ceil(n), MAX_COST);
    };
  if (price === null || typeof price !== 'object')
    fail('expected { inputTokens, outputTokens } (prices per token) or a function of the usage');
  const { inputTokens, outputTokens } = price;
  if (!finitePrice(inputTokens) || !finitePrice(outputTokens))
    fail(`per-token prices must be finite numbers ≥ 0 (got ${String(inputTokens)}, ${String(outputTokens)})`);
  return (usage) => Math.min(Math.ceil(usage.inputTokens * inputTokens + usage.outputTokens * outputTokens), MAX_COST);
}
