/**
 * The small parts every limiter path shares: a store call answered by the failure policy when the store fails, a
 * promise out of any answer, a request's key per limit, and the combined decision with each limit's own.
 */
import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';
import type { MaybePromise, StoreItem } from '../stores/store.js';
import { combineDecisions, decisionWithResults } from './combine.js';
import { isStoreFailure } from './failure-policy.js';
import type { LimiterDecision } from './limiter-decision.js';
import type { LimiterKey } from './limiter-key.js';
import type { ResolvedLimit } from './options.js';

/**
 * Runs a store call; when the store fails (not when it is misused), answers with `fallback` instead:
 * the limiter's failure policy.
 */
export function withFailure<T>(call: () => MaybePromise<T>, fallback: () => T): MaybePromise<T> {
  let result: MaybePromise<T>;
  try {
    result = call();
  } catch (error) {
    if (isStoreFailure(error)) return fallback();
    throw error;
  }
  return result instanceof Promise
    ? result.catch((error: unknown) => {
        if (isStoreFailure(error)) return fallback();
        throw error;
      })
    : result;
}

/** Runs `work` and always answers with a promise, turning a synchronous throw into a rejection. */
export function settle<T>(work: () => MaybePromise<T>): Promise<T> {
  try {
    const result = work();
    return result instanceof Promise ? result : Promise.resolve(result);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The key of limit `name`, or undefined when the request does not carry one. */
export function keyFor(key: LimiterKey, name: string): string | undefined {
  if (typeof key === 'string') return key;
  if (key === null || typeof key !== 'object') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_KEY',
      `key: expected a string or an object of strings, got ${typeof key}`,
    );
  }
  const k = key[name];
  if (k === null || k === undefined) return undefined;
  if (typeof k !== 'string') {
    throw new SluiceError('ERR_SLUICE_INVALID_KEY', `key.${name}: expected a string, got ${typeof k}`);
  }
  return k;
}

/** The key of a limiter's only limit, which a request must carry. */
export function singleKey(key: LimiterKey, name: string): string {
  const k = keyFor(key, name);
  if (k === undefined) throw new SluiceError('ERR_SLUICE_INVALID_KEY', 'key: expected a string, got nothing');
  return k;
}

export function itemsFor(
  limits: readonly ResolvedLimit[],
  key: LimiterKey,
  cost: number,
): (StoreItem & { name: string })[] {
  const items: (StoreItem & { name: string })[] = [];
  for (const limit of limits) {
    const k = keyFor(key, limit.name);
    if (k !== undefined) items.push({ key: k, policy: limit.policy, cost, name: limit.name });
  }
  return items;
}

/** The combined decision with each limit's own attached. */
export function withResults(
  items: readonly (StoreItem & { name: string })[],
  decisions: readonly Decision[],
): LimiterDecision {
  return decisionWithResults(
    combineDecisions(decisions),
    items.map((item, i) => ({ name: item.name, key: item.key, decision: decisions[i] as Decision })),
  );
}
