import { performance } from 'node:perf_hooks';
import type { Decision, ResolvedPolicy, Store } from 'sluice';
import { createMemoryStore, isSluiceError, type MemoryStore, resolveCost, resolvePolicy, SluiceError } from 'sluice';
import type { FailMode } from 'sluice/rules';
import type { AccessLists } from './access-lists.js';
import { isStoreError } from './decide.js';
import type { DecisionHub } from './decision-events.js';
import { outcomeOf } from './decision-events.js';
import { HttpError, isObject } from './http/respond.js';
import type { ServiceMetrics } from './metrics.js';

/** Most checks in one `POST /v1/check`. */
export const MAX_CHECKS = 1000;
/** Longest key accepted. */
export const MAX_KEY_LENGTH = 1024;

/** One result of `POST /v1/check`: a decision, or why this one check could not be made. */
export type CheckResult =
  | {
      allowed: boolean;
      limit: number;
      remaining: number;
      resetMs: number;
      /** `null` when the request can never pass (its cost exceeds the capacity). */
      retryAfterMs: number | null;
      delayMs?: number;
      reason?: string;
      degraded?: boolean;
    }
  | { error: { code: string; message: string } };

/** The config-less API: each check names its own key and policy. */
export interface CheckApi {
  /** Validates a `{"checks": [...]}` body and decides every check, results in request order. */
  check(body: unknown): Promise<{ results: CheckResult[] }>;
}

/** Options of {@link createCheckApi}. */
export interface CheckApiOptions {
  store: Store;
  lists: AccessLists;
  hub: DecisionHub;
  metrics: ServiceMetrics;
  now: () => number;
  /** Most distinct policies kept resolved; the oldest is dropped beyond. @default 10_000 */
  maxPolicies?: number;
  /**
   * When the store fails: allow (`open`, marked `degraded`), reject (`closed`, reason
   * `store-unavailable`), or decide on an in-process store (`insurance`). @default a per-check error
   */
  fail?: FailMode;
}

const ITEM_KEYS = new Set(['key', 'cost']);
/** Counters of `/v1/check` live apart from the rules' counters. */
export const CHECK_KEY_PREFIX = 'v1:';

/**
 * Creates the `POST /v1/check` handler. Each check is independent (one failing check does not stop the
 * others); policies are validated once and kept in a bounded cache, since callers repeat the same few.
 */
export function createCheckApi(options: CheckApiOptions): CheckApi {
  const { store, lists, hub, metrics, now } = options;
  const maxPolicies = options.maxPolicies ?? 10_000;
  const policies = new Map<string, ResolvedPolicy>();
  let insurance: MemoryStore | undefined;

  /** The failure policy's answer when the store could not decide. */
  function failed(
    error: unknown,
    key: string,
    policy: ResolvedPolicy,
    cost: number,
    atMs: number,
  ): Decision | undefined {
    if (!isStoreError(error) || options.fail === undefined) return undefined;
    if (options.fail === 'open') {
      return {
        allowed: true,
        limit: policy.limit,
        remaining: policy.limit,
        resetMs: 0,
        retryAfterMs: 0,
        degraded: true,
      };
    }
    if (options.fail === 'closed') {
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
    return { ...insurance.check(CHECK_KEY_PREFIX + key, policy, cost, atMs, true), degraded: true };
  }

  function policyFor(item: Record<string, unknown>, path: string): ResolvedPolicy {
    const { key: _key, cost: _cost, ...policy } = item;
    // The whole policy part of the item is the cache key, so an unknown field never hits a cached policy.
    const cacheKey = JSON.stringify(policy);
    const cached = policies.get(cacheKey);
    if (cached !== undefined) return cached;
    const resolved = resolvePolicy(item as never, path, ITEM_KEYS);
    if (policies.size >= maxPolicies) policies.delete(policies.keys().next().value as string);
    policies.set(cacheKey, resolved);
    return resolved;
  }

  async function one(item: unknown, i: number, atMs: number): Promise<CheckResult> {
    const path = `checks[${i}].`;
    let key: string;
    let policy: ResolvedPolicy;
    let cost: number;
    try {
      if (!isObject(item)) throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', `checks[${i}]: expected an object`);
      if (typeof item.key !== 'string' || item.key === '' || item.key.length > MAX_KEY_LENGTH) {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_KEY',
          `${path}key: expected a non-empty string of at most ${MAX_KEY_LENGTH} characters`,
        );
      }
      key = item.key;
      policy = policyFor(item, path);
      cost = withPath(() => resolveCost(item.cost), path);
    } catch (error) {
      return errorResult(error);
    }
    const list = lists.match('', 'key', key);
    let decision: Decision;
    if (list === 'deny') {
      decision = {
        allowed: false,
        limit: policy.limit,
        remaining: 0,
        resetMs: 0,
        retryAfterMs: Number.POSITIVE_INFINITY,
        reason: 'denied',
      };
    } else if (list === 'allow') {
      decision = { allowed: true, limit: policy.limit, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 };
    } else {
      try {
        decision = await store.check(CHECK_KEY_PREFIX + key, policy, cost, atMs, true);
      } catch (error) {
        if (isStoreError(error)) metrics.observeStore(0, true);
        const fallback = failed(error, key, policy, cost, atMs);
        if (fallback === undefined) return errorResult(error);
        decision = fallback;
      }
    }
    hub.emit({
      source: 'check',
      domain: '',
      rule: policy.id,
      key,
      outcome: outcomeOf(decision.allowed, decision.limit, decision.remaining),
      limit: decision.limit,
      remaining: decision.remaining,
      resetMs: decision.resetMs,
      ...(list === undefined ? {} : { list }),
      atMs,
    });
    return resultOf(decision);
  }

  return {
    async check(body) {
      if (!isObject(body) || !Array.isArray(body.checks)) {
        throw new HttpError(
          400,
          'ERR_SLUICE_INVALID_REQUEST',
          'expected a JSON object {"checks": [{"key", "limit", "period", ...}]}',
        );
      }
      const unknown = Object.keys(body).filter((k) => k !== 'checks');
      if (unknown.length > 0) {
        throw new HttpError(
          400,
          'ERR_SLUICE_INVALID_REQUEST',
          `${unknown[0]}: unknown field (the body holds only "checks")`,
        );
      }
      const checks = body.checks;
      if (checks.length > MAX_CHECKS) {
        throw new HttpError(
          400,
          'ERR_SLUICE_TOO_MANY_ITEMS',
          `checks: at most ${MAX_CHECKS} per request, got ${checks.length}`,
        );
      }
      const atMs = now();
      const started = performance.now();
      const results = store.synchronous
        ? await sequential(checks, (c, i) => one(c, i, atMs))
        : await Promise.all(checks.map((c, i) => one(c, i, atMs)));
      if (checks.length > 0) metrics.observeStore((performance.now() - started) / 1000 / checks.length, false);
      return { results };
    },
  };
}

/** On a synchronous store each check completes at once; awaiting them in order keeps counting in request order. */
async function sequential<T>(items: readonly unknown[], run: (item: unknown, i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (const [i, item] of items.entries()) out.push(await run(item, i));
  return out;
}

function withPath<T>(work: () => T, path: string): T {
  try {
    return work();
  } catch (error) {
    if (isSluiceError(error) && !error.message.startsWith(path)) {
      throw new SluiceError(error.code, `${path}${error.message}`);
    }
    throw error;
  }
}

function errorResult(error: unknown): CheckResult {
  if (isSluiceError(error)) return { error: { code: error.code, message: error.message } };
  return { error: { code: 'ERR_SLUICE_INTERNAL', message: 'internal error' } };
}

function resultOf(d: Decision): CheckResult {
  const result: CheckResult = {
    allowed: d.allowed,
    limit: d.limit,
    remaining: d.remaining,
    resetMs: d.resetMs,
    retryAfterMs: Number.isFinite(d.retryAfterMs) ? d.retryAfterMs : null,
  };
  if (d.delayMs !== undefined) result.delayMs = d.delayMs;
  if (d.reason !== undefined) result.reason = d.reason;
  if (d.degraded !== undefined) result.degraded = d.degraded;
  return result;
}
