import { performance } from 'node:perf_hooks';
import type { Decision, ResolvedPolicy, Store } from 'sluice';
import { createMemoryStore, isSluiceError, type MemoryStore, resolveCost, resolvePolicy, SluiceError } from 'sluice';
import type { FailMode } from 'sluice/rules';
import type { AccessLists } from '../../core/access-lists.js';
import { isStoreError } from '../../core/decide.js';
import type { DecisionEvent, DecisionHub } from '../../observability/decision-events.js';
import { outcomeOf } from '../../observability/decision-events.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import {
  acquireArgs,
  type CheckOp,
  decideGroup,
  EXTENSION_KEYS,
  type GroupMember,
  groupOf,
  MAX_NAME_LENGTH,
  opOf,
  releaseArgs,
  scopedPolicy,
  timeOf,
} from './check-ops.js';
import { HttpError, isObject } from './respond.js';

/** Most checks in one `POST /v1/check`. */
export const MAX_CHECKS = 1000;
/** Longest key accepted, in characters. */
export const MAX_KEY_LENGTH = 1024;
/** Longest string a policy field (`algorithm`, `period`, `blockDuration`) may be, in characters. */
export const MAX_FIELD_LENGTH = 64;

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
      /** `acquire`: the lease to give back with `release`. */
      lease?: { id: string; expiresAt: number };
    }
  /** `refund`, `reset`: done. */
  | { ok: true }
  /** `release`: whether the lease was still held. */
  | { released: boolean }
  | { error: { code: string; message: string } };

/** A result that carries a decision. */
type DecisionResult = Extract<CheckResult, { allowed: boolean }>;

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
  /** Accept a caller's `nowMs` (`sluice serve --client-clock`): for tests that drive time. @default false */
  clientClock?: boolean;
  /** Share of a limit used past which an allowed check counts as `near_limit`. @default NEAR_LIMIT_RATIO */
  nearLimitRatio?: number;
}

const ITEM_KEYS = new Set(['key', 'cost', ...EXTENSION_KEYS]);
/** The fields that make an item's policy (`name` is one: it scopes the counters). */
const POLICY_FIELDS = ['algorithm', 'limit', 'period', 'burst', 'blockDuration', 'name'] as const;
const KNOWN_FIELDS = new Set<string>([...ITEM_KEYS, ...POLICY_FIELDS]);
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
    commit = true,
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
    return { ...insurance.check(CHECK_KEY_PREFIX + key, policy, cost, atMs, commit), degraded: true };
  }

  function policyFor(item: Record<string, unknown>, path: string): ResolvedPolicy {
    // Every field is checked before anything walks a value: an unknown field may hold anything (a
    // 100,000-deep array would overflow JSON.stringify's stack), and error messages quote only short text.
    for (const name of Object.keys(item)) {
      if (!KNOWN_FIELDS.has(name)) {
        throw new SluiceError(
          'ERR_SLUICE_UNKNOWN_OPTION',
          `${path}${clip(name)}: unknown field (known: ${[...KNOWN_FIELDS].join(', ')})`,
          { option: `${path}${clip(name)}` },
        );
      }
    }
    const values = POLICY_FIELDS.map((name) => {
      const v = item[name];
      if (name === 'name' && v !== undefined && typeof v !== 'string') {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_REQUEST',
          `${path}name: expected a non-empty string of at most ${MAX_NAME_LENGTH} printable characters`,
        );
      }
      if (v === undefined || typeof v === 'number') return v ?? null;
      if (typeof v !== 'string') {
        throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${path}${name}: expected a number or a string`, {
          option: `${path}${name}`,
        });
      }
      if (v.length > MAX_FIELD_LENGTH && name !== 'name') {
        throw new SluiceError(
          'ERR_SLUICE_FIELD_TOO_LONG',
          `${path}${name}: at most ${MAX_FIELD_LENGTH} characters, got ${v.length}`,
          { option: `${path}${name}` },
        );
      }
      return v;
    });
    // The policy fields are the cache key, so an unknown field never hits a cached policy.
    const cacheKey = JSON.stringify(values);
    const cached = policies.get(cacheKey);
    if (cached !== undefined) return cached;
    const resolved = scopedPolicy(resolvePolicy(item as never, path, ITEM_KEYS), item.name, path);
    if (policies.size >= maxPolicies) policies.delete(policies.keys().next().value as string);
    policies.set(cacheKey, resolved);
    return resolved;
  }

  /** An item, validated: what to do, to which key, under which policy, at what time. */
  interface Parsed {
    readonly op: CheckOp;
    readonly key: string;
    /** Undefined for `acquire` and `release`, which take no policy. */
    readonly policy: ResolvedPolicy | undefined;
    readonly cost: number;
    readonly atMs: number;
    readonly group: string | undefined;
    readonly item: Record<string, unknown>;
    readonly path: string;
  }

  function parse(item: unknown, i: number, atMs: number): Parsed {
    const path = `checks[${i}].`;
    if (!isObject(item)) throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', `checks[${i}]: expected an object`);
    if (typeof item.key !== 'string' || item.key === '' || item.key.length > MAX_KEY_LENGTH) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_KEY',
        `${path}key: expected a non-empty string of at most ${MAX_KEY_LENGTH} characters`,
      );
    }
    const op = opOf(item, path);
    const at = timeOf(item, path, atMs, options.clientClock === true);
    const group = groupOf(item, path);
    if (group !== undefined && op !== 'check' && op !== 'peek') {
      throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', `${path}group: only checks and peeks are decided in groups`);
    }
    const key = item.key;
    // Object literals, not spreads of a shared base (nor a spread in the decision event): with them,
    // about 400 kB more of the requests stayed alive through each young-generation GC under load and was
    // promoted (`POST /v1/check` from autocannon, `node --trace-gc-nvp`; see also sendJson).
    if (op === 'acquire') {
      const lease = acquireArgs(item, path);
      const parsed: Parsed & { lease: typeof lease } = {
        op,
        key,
        atMs: at,
        group,
        item,
        path,
        policy: undefined,
        cost: 1,
        lease,
      };
      return parsed;
    }
    if (op === 'release') return { op, key, atMs: at, group, item, path, policy: undefined, cost: 0 };
    const policy = policyFor(item, path);
    const cost = op === 'reset' ? 0 : withPath(() => resolveCost(item.cost), path);
    return { op, key, atMs: at, group, item, path, policy, cost };
  }

  function emit(p: Parsed, policy: ResolvedPolicy, decision: Decision, list: 'allow' | 'deny' | undefined): void {
    const event: { -readonly [K in keyof DecisionEvent]: DecisionEvent[K] } = {
      source: 'check',
      domain: '',
      rule: policy.id,
      key: p.key,
      outcome: outcomeOf(decision.allowed, decision.limit, decision.remaining, options.nearLimitRatio),
      limit: decision.limit,
      remaining: decision.remaining,
      resetMs: decision.resetMs,
      atMs: p.atMs,
    };
    if (list !== undefined) event.list = list;
    hub.emit(event);
  }

  async function one(item: unknown, i: number, atMs: number): Promise<CheckResult> {
    let p: Parsed;
    try {
      p = parse(item, i, atMs);
    } catch (error) {
      return errorResult(error);
    }
    if (p.op !== 'check' && p.op !== 'peek') return other(p);
    const { key, cost } = p;
    const policy = p.policy as ResolvedPolicy;
    const commit = p.op === 'check';
    const list = lists.match('', 'key', key);
    let decision: Decision;
    if (list === 'deny') {
      decision = deniedDecision(policy.limit);
    } else if (list === 'allow') {
      decision = { allowed: true, limit: policy.limit, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 };
    } else {
      try {
        decision = await store.check(CHECK_KEY_PREFIX + key, policy, cost, p.atMs, commit);
      } catch (error) {
        if (isStoreError(error)) metrics.observeStore(0, true);
        const fallback = failed(error, key, policy, cost, p.atMs, commit);
        if (fallback === undefined) return errorResult(error);
        decision = fallback;
      }
    }
    if (commit) emit(p, policy, decision, list);
    return resultOf(decision);
  }

  /** `refund`, `reset`, `acquire`, `release`: store operations without a decision to report. */
  async function other(p: Parsed): Promise<CheckResult> {
    const stored = CHECK_KEY_PREFIX + p.key;
    try {
      switch (p.op) {
        case 'refund':
          await store.refund(stored, p.policy as ResolvedPolicy, p.cost, p.atMs);
          return { ok: true };
        case 'reset':
          await store.reset(stored, p.policy as ResolvedPolicy);
          return { ok: true };
        case 'acquire': {
          const { limit, leaseMs } = (p as Parsed & { lease: { limit: number; leaseMs: number } }).lease;
          if (lists.match('', 'key', p.key) === 'deny') return resultOf(deniedDecision(limit));
          const d = await store.acquire(stored, limit, leaseMs, p.atMs);
          const result = resultOf(d);
          if (d.lease !== undefined && 'allowed' in result) {
            result.lease = { id: d.lease.id, expiresAt: d.lease.expiresAt };
          }
          return result;
        }
        default:
          return { released: await store.release(releaseArgs(p.item, p.path, stored), p.atMs) };
      }
    } catch (error) {
      if (isStoreError(error)) metrics.observeStore(0, true);
      return errorResult(error);
    }
  }

  /** The items of one group, decided together, all or nothing; results by item index. */
  async function group(checks: readonly unknown[], indices: readonly number[], atMs: number): Promise<CheckResult[]> {
    const parsed: (Parsed | CheckResult)[] = indices.map((i) => {
      try {
        return parse(checks[i], i, atMs);
      } catch (error) {
        return errorResult(error);
      }
    });
    const valid = parsed.filter((p): p is Parsed => 'op' in p);
    const first = valid[0];
    let problem: string | undefined;
    if (valid.length < parsed.length) problem = 'another check of its group is invalid';
    else if (first === undefined || valid.some((p) => p.op !== first.op || p.atMs !== first.atMs)) {
      problem = 'the checks of a group must share op and nowMs';
    }
    if (problem !== undefined || first === undefined) {
      const error = { error: { code: 'ERR_SLUICE_GROUP_INVALID', message: problem ?? 'empty group' } };
      return parsed.map((p) => ('op' in p ? error : p));
    }
    const commit = first.op === 'check';
    const members: GroupMember[] = valid.map((p, index) => ({
      index,
      item: { key: CHECK_KEY_PREFIX + p.key, policy: p.policy as ResolvedPolicy, cost: p.cost },
      list: lists.match('', 'key', p.key),
    }));
    let decisions: Decision[];
    try {
      decisions = await decideGroup(store, members, first.atMs, commit);
    } catch (error) {
      if (isStoreError(error)) metrics.observeStore(0, true);
      const fallbacks = valid.map((p) => failed(error, p.key, p.policy as ResolvedPolicy, p.cost, first.atMs, commit));
      if (fallbacks.some((d) => d === undefined)) return valid.map(() => errorResult(error));
      decisions = fallbacks as Decision[];
    }
    return valid.map((p, j) => {
      const d = decisions[j] as Decision;
      if (commit) emit(p, p.policy as ResolvedPolicy, d, members[j]?.list);
      return resultOf(d);
    });
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
      const groups = groupsOf(checks);
      const run =
        groups === undefined
          ? (c: unknown, i: number) => one(c, i, atMs)
          : (c: unknown, i: number) =>
              inGroup(c, i, groups, (indices) => group(checks, indices, atMs)) ?? one(c, i, atMs);
      const results = store.synchronous ? await sequential(checks, run) : await Promise.all(checks.map(run));
      if (checks.length > 0) metrics.observeStore((performance.now() - started) / 1000 / checks.length, false);
      return { results };
    },
  };
}

/** Item indices by group, or undefined when no item has a group (the common case: nothing to do). */
function groupsOf(checks: readonly unknown[]): Map<unknown, number[]> | undefined {
  let groups: Map<unknown, number[]> | undefined;
  checks.forEach((c, i) => {
    if (!isObject(c) || c.group === undefined) return;
    groups ??= new Map();
    // Typed keys: the group 1 and the group "1" are different groups.
    const id = `${typeof c.group}:${String(c.group)}`;
    const indices = groups.get(id);
    if (indices === undefined) groups.set(id, [i]);
    else indices.push(i);
  });
  return groups;
}

/**
 * A grouped item's result: its group is decided when its first item comes up (in request order), and
 * the later items take their results from that. Undefined for an item outside any group.
 */
function inGroup(
  c: unknown,
  i: number,
  groups: Map<unknown, number[]>,
  decide: (indices: readonly number[]) => Promise<CheckResult[]>,
): Promise<CheckResult> | undefined {
  if (!isObject(c) || c.group === undefined) return undefined;
  const indices = groups.get(`${typeof c.group}:${String(c.group)}`) as number[] & { decided?: Promise<CheckResult[]> };
  indices.decided ??= decide(indices);
  const at = indices.indexOf(i);
  return indices.decided.then((results) => results[at] as CheckResult);
}

/** On a synchronous store each check completes at once; awaiting them in order keeps counting in request order. */
async function sequential<T>(items: readonly unknown[], run: (item: unknown, i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (const [i, item] of items.entries()) out.push(await run(item, i));
  return out;
}

/** At most MAX_FIELD_LENGTH characters of a caller's text, for messages. */
function clip(text: string): string {
  return text.length <= MAX_FIELD_LENGTH ? text : `${text.slice(0, MAX_FIELD_LENGTH)}…`;
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

function deniedDecision(limit: number): Decision {
  return { allowed: false, limit, remaining: 0, resetMs: 0, retryAfterMs: Number.POSITIVE_INFINITY, reason: 'denied' };
}

function resultOf(d: Decision): DecisionResult {
  const result: DecisionResult = {
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
