/**
 * Explains `/v1/check` items: each item's list, policy and counter as it stands (a look, not a check), and what the
 * service's failure policy would answer when the store cannot be read.
 */
import type { Clock, Decision, Store } from 'sluice';
import { isSluiceError } from 'sluice';
import type { FailMode } from 'sluice/rules';
import type { AccessLists } from '../../core/access-lists.js';
import { CHECK_KEY_PREFIX, createCheckFallback } from './check-fallback.js';
import { createCheckParser } from './check-parse.js';

/** One `/v1/check` item, explained. */
export interface ExplainedCheck {
  readonly key?: string;
  /** `deny-list`, `allow-list`, `within-limit`, `over-limit`, `degraded`, or `invalid` (the item's error). */
  readonly verdict: string;
  readonly policy?: { algorithm: string; limit: number; periodMs: number; burst?: number; name?: string };
  readonly cost?: number;
  readonly allowed?: boolean;
  readonly remaining?: number;
  readonly resetMs?: number;
  readonly retryAfterMs?: number | null;
  readonly reason?: string;
  readonly error?: { code: string; message: string };
}

/** Explains `/v1/check` items one by one, consuming nothing. */
export function createCheckExplainer(store: Store, clock: Clock, lists: AccessLists, fail: FailMode | undefined) {
  const fallback = createCheckFallback(fail);
  const parse = createCheckParser({ maxPolicies: 64, clientClock: false });
  return async (checks: readonly unknown[]): Promise<ExplainedCheck[]> => {
    const out: ExplainedCheck[] = [];
    const atMs = clock.now();
    for (const [i, item] of checks.entries()) {
      let parsed: ReturnType<typeof parse>;
      try {
        parsed = parse(item, i, atMs);
      } catch (error) {
        if (!isSluiceError(error)) throw error;
        out.push({ verdict: 'invalid', error: { code: error.code, message: error.message } });
        continue;
      }
      const { key, policy, cost } = parsed;
      if (policy === undefined) {
        out.push({
          key,
          verdict: 'invalid',
          error: {
            code: 'ERR_SLUICE_EXPLAIN_INVALID',
            message: `checks[${i}]: only checks, peeks and reserves are explained`,
          },
        });
        continue;
      }
      const shown = {
        algorithm: policy.algorithm,
        limit: policy.limit,
        periodMs: policy.periodMs,
      };
      const list = lists.match('', 'key', key);
      if (list !== undefined) {
        out.push({ key, verdict: `${list}-list`, policy: shown, cost, allowed: list === 'allow' });
        continue;
      }
      let decision: Decision;
      try {
        decision = await store.check(CHECK_KEY_PREFIX + key, policy, cost, atMs, false);
      } catch (error) {
        decision = throwUnless(fallback(error, key, policy, cost, atMs, false), error);
      }
      out.push({
        key,
        verdict: decision.degraded === true ? 'degraded' : decision.allowed ? 'within-limit' : 'over-limit',
        policy: shown,
        cost,
        allowed: decision.allowed,
        remaining: Math.max(0, Math.floor(decision.remaining)),
        resetMs: Math.ceil(decision.resetMs),
        retryAfterMs: Number.isFinite(decision.retryAfterMs) ? Math.ceil(decision.retryAfterMs) : null,
        ...(decision.reason === undefined ? {} : { reason: decision.reason }),
      });
    }
    return out;
  };
}

function throwUnless(decision: Decision | undefined, error: unknown): Decision {
  if (decision === undefined) throw error;
  return decision;
}
