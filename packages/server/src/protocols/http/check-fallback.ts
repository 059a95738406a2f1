/** `/v1/check`'s failure policy: what a check answers when the store cannot (open, closed, or an in-process insurance store). */
import type { Decision, ResolvedPolicy } from 'sluice';
import { createMemoryStore, type MemoryStore } from 'sluice';
import type { FailMode } from 'sluice/rules';
import { isStoreError } from '../../core/decide.js';

/** Counters of `/v1/check` live apart from the rules' counters. */
export const CHECK_KEY_PREFIX = 'v1:';

/** The failure policy's decision for a check the store failed, or undefined when the error is the answer. */
export type CheckFallback = (
  error: unknown,
  key: string,
  policy: ResolvedPolicy,
  cost: number,
  atMs: number,
  commit?: boolean,
) => Decision | undefined;

/** See {@link CheckFallback}; without `fail`, every store error is answered as the check's error. */
export function createCheckFallback(fail: FailMode | undefined): CheckFallback {
  let insurance: MemoryStore | undefined;
  return (error, key, policy, cost, atMs, commit = true) => {
    if (!isStoreError(error) || fail === undefined) return undefined;
    if (fail === 'open') {
      return {
        allowed: true,
        limit: policy.limit,
        remaining: policy.limit,
        resetMs: 0,
        retryAfterMs: 0,
        degraded: true,
      };
    }
    if (fail === 'closed') {
      return {
        allowed: false,
        limit: policy.limit,
        remaining: 0,
        resetMs: 0,
        retryAfterMs: 1000,
        reason: 'store-unavailable',
        degraded: true,
      };
    }
    insurance ??= createMemoryStore({ maxKeys: 100_000 });
    return { ...insurance.check(CHECK_KEY_PREFIX + key, policy, cost, atMs, commit), degraded: true };
  };
}
