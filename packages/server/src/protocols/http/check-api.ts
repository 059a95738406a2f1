/**
 * `POST /v1/check`, the config-less API: each item names its own key and policy; items are decided
 * independently (one failing item does not stop the others), or all or nothing within a `group`.
 */
import { performance } from 'node:perf_hooks';
import type { Decision, ResolvedPolicy, Store } from 'sluice';
import type { FailMode } from 'sluice/rules';
import type { AccessLists } from '../../core/access-lists.js';
import { isStoreError } from '../../core/decide.js';
import type { CheckDecisionInfo } from '../../observability/capture/capture-recorder.js';
import type { DecisionEvent, DecisionHub } from '../../observability/decision-events.js';
import { outcomeOf } from '../../observability/decision-events.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { CHECK_KEY_PREFIX, type CheckFallback, createCheckFallback } from './check-fallback.js';
import { groupsOf, inGroup, sequential } from './check-groups.js';
import { chargeItems, decideGroup, type GroupMember, releaseArgs } from './check-ops.js';
import { createCheckParser, type ParsedCheck } from './check-parse.js';
import { type CheckReservations, createCheckReservations } from './check-reservations.js';
import { type CheckResult, deniedDecision, errorResult, resultOf } from './check-results.js';
import { HttpError, isObject } from './respond.js';

export { CHECK_KEY_PREFIX } from './check-fallback.js';
export { MAX_FIELD_LENGTH, MAX_KEY_LENGTH } from './check-parse.js';
export type { CheckResult } from './check-results.js';

/** Most checks in one `POST /v1/check`. */
export const MAX_CHECKS = 1000;

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
  /** How long a `reserve` may stay unsettled before it lapses, charged in full. @default 10 minutes */
  reservationTtlMs?: number;
  /** Most reservations held at once; a `reserve` past it is refused (ERR_SLUICE_TOO_MANY_RESERVATIONS). @default 100_000 */
  maxReservations?: number;
  /** `--capture`: each committed `check` decided by its policy (not a group's, nor an access list's). @default off */
  capture?: (info: CheckDecisionInfo) => void;
}

/** What every item of every request is decided with. */
interface CheckContext {
  readonly store: Store;
  readonly lists: AccessLists;
  readonly hub: DecisionHub;
  readonly metrics: ServiceMetrics;
  readonly nearLimitRatio: number | undefined;
  readonly fallback: CheckFallback;
  readonly reservations: CheckReservations;
  readonly capture: ((info: CheckDecisionInfo) => void) | undefined;
  parse(item: unknown, i: number, atMs: number): ParsedCheck;
}

/** Creates the `POST /v1/check` handler. */
export function createCheckApi(options: CheckApiOptions): CheckApi {
  const context: CheckContext = {
    store: options.store,
    lists: options.lists,
    hub: options.hub,
    metrics: options.metrics,
    nearLimitRatio: options.nearLimitRatio,
    fallback: createCheckFallback(options.fail),
    reservations: createCheckReservations({
      store: options.store,
      ...(options.reservationTtlMs === undefined ? {} : { ttlMs: options.reservationTtlMs }),
      ...(options.maxReservations === undefined ? {} : { max: options.maxReservations }),
    }),
    capture: options.capture,
    parse: createCheckParser({ maxPolicies: options.maxPolicies ?? 10_000, clientClock: options.clientClock === true }),
  };
  return { check: (body) => checkAll(context, checksOf(body), options.now()) };
}

/** The body's `checks`, or a 400 saying what the body must be. */
function checksOf(body: unknown): unknown[] {
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
  if (body.checks.length > MAX_CHECKS) {
    throw new HttpError(
      400,
      'ERR_SLUICE_TOO_MANY_ITEMS',
      `checks: at most ${MAX_CHECKS} per request, got ${body.checks.length}`,
    );
  }
  return body.checks;
}

async function checkAll(context: CheckContext, checks: unknown[], atMs: number): Promise<{ results: CheckResult[] }> {
  const started = performance.now();
  const groups = groupsOf(checks);
  const run =
    groups === undefined
      ? (c: unknown, i: number) => decideOne(context, c, i, atMs)
      : (c: unknown, i: number) =>
          inGroup(c, i, groups, (indices) => decideGroupItems(context, checks, indices, atMs)) ??
          decideOne(context, c, i, atMs);
  const results = context.store.synchronous ? await sequential(checks, run) : await Promise.all(checks.map(run));
  if (checks.length > 0) context.metrics.observeStore((performance.now() - started) / 1000 / checks.length, false);
  return { results };
}

/** One item outside any group. */
async function decideOne(context: CheckContext, item: unknown, i: number, atMs: number): Promise<CheckResult> {
  let p: ParsedCheck;
  try {
    p = context.parse(item, i, atMs);
  } catch (error) {
    return errorResult(error);
  }
  if (p.op === 'reserve') return reserveOne(context, p);
  if (p.op !== 'check' && p.op !== 'peek') return storeOp(context, p);
  const { key, cost } = p;
  const policy = p.policy as ResolvedPolicy;
  const commit = p.op === 'check';
  const list = context.lists.match('', 'key', key);
  let decision: Decision;
  if (list === 'deny') {
    decision = deniedDecision(policy.limit);
  } else if (list === 'allow') {
    decision = { allowed: true, limit: policy.limit, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 };
  } else {
    try {
      decision = await context.store.check(CHECK_KEY_PREFIX + key, policy, cost, p.atMs, commit);
    } catch (error) {
      if (isStoreError(error)) context.metrics.observeStore(0, true);
      const fallback = context.fallback(error, key, policy, cost, p.atMs, commit);
      if (fallback === undefined) return errorResult(error);
      decision = fallback;
    }
  }
  if (commit) emitDecision(context, p, policy, decision, list);
  if (commit && list === undefined && context.capture !== undefined) {
    const { item, atMs } = p;
    context.capture({ key, item, cost, atMs, policyId: policy.id, allowed: decision.allowed });
  }
  return resultOf(decision);
}

/** `refund`, `reset`, `acquire`, `release`: store operations without a decision to report. */
async function storeOp(context: CheckContext, p: ParsedCheck): Promise<CheckResult> {
  const { store } = context;
  const stored = CHECK_KEY_PREFIX + p.key;
  try {
    switch (p.op) {
      case 'refund':
        await store.refund(stored, p.policy as ResolvedPolicy, p.cost, p.atMs);
        return { ok: true };
      case 'reset':
        await store.reset(stored, p.policy as ResolvedPolicy);
        return { ok: true };
      case 'charge': {
        const [charged] = await chargeItems(
          store,
          [{ key: stored, policy: p.policy as ResolvedPolicy, cost: p.cost }],
          p.atMs,
        );
        return resultOf(charged as Decision);
      }
      case 'acquire': {
        const { limit, leaseMs } = p.lease as { limit: number; leaseMs: number };
        if (context.lists.match('', 'key', p.key) === 'deny') return resultOf(deniedDecision(limit));
        const d = await store.acquire(stored, limit, leaseMs, p.atMs);
        const result = resultOf(d);
        if (d.lease !== undefined) result.lease = { id: d.lease.id, expiresAt: d.lease.expiresAt };
        return result;
      }
      case 'settle':
      case 'cancel': {
        const actual = p.op === 'settle' ? p.cost : undefined;
        return await context.reservations.settle(
          p.item.reservation,
          stored,
          p.policy as ResolvedPolicy,
          actual,
          p.atMs,
        );
      }
      default:
        return { released: await store.release(releaseArgs(p.item, p.path, stored), p.atMs) };
    }
  } catch (error) {
    if (isStoreError(error)) context.metrics.observeStore(0, true);
    return errorResult(error);
  }
}

/** `reserve`: a check whose cost is held under an id until it is settled, cancelled or lapses. */
async function reserveOne(context: CheckContext, p: ParsedCheck): Promise<CheckResult> {
  const policy = p.policy as ResolvedPolicy;
  const list = context.lists.match('', 'key', p.key);
  if (list === 'deny') return resultOf(deniedDecision(policy.limit));
  let reserved: Awaited<ReturnType<CheckReservations['reserve']>>;
  try {
    reserved = await context.reservations.reserve(CHECK_KEY_PREFIX + p.key, policy, p.cost, p.atMs, list === 'allow');
  } catch (error) {
    if (isStoreError(error)) context.metrics.observeStore(0, true);
    return errorResult(error);
  }
  emitDecision(context, p, policy, reserved.decision, list);
  const result = resultOf(reserved.decision);
  if (reserved.reservation !== undefined) result.reservation = reserved.reservation;
  return result;
}

/** The items of one group, decided together, all or nothing; results by item index. */
async function decideGroupItems(
  context: CheckContext,
  checks: readonly unknown[],
  indices: readonly number[],
  atMs: number,
): Promise<CheckResult[]> {
  const parsed: (ParsedCheck | CheckResult)[] = indices.map((i) => {
    try {
      return context.parse(checks[i], i, atMs);
    } catch (error) {
      return errorResult(error);
    }
  });
  const valid = parsed.filter((p): p is ParsedCheck => 'op' in p);
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
    list: context.lists.match('', 'key', p.key),
  }));
  let decisions: Decision[];
  try {
    decisions =
      first.op === 'charge'
        ? await chargeItems(
            context.store,
            members.map((m) => m.item),
            first.atMs,
          )
        : await decideGroup(context.store, members, first.atMs, commit);
  } catch (error) {
    if (isStoreError(error)) context.metrics.observeStore(0, true);
    const fallbacks = valid.map((p) =>
      context.fallback(error, p.key, p.policy as ResolvedPolicy, p.cost, first.atMs, commit),
    );
    if (fallbacks.some((d) => d === undefined)) return valid.map(() => errorResult(error));
    decisions = fallbacks as Decision[];
  }
  return valid.map((p, j) => {
    const d = decisions[j] as Decision;
    if (commit) emitDecision(context, p, p.policy as ResolvedPolicy, d, members[j]?.list);
    return resultOf(d);
  });
}

function emitDecision(
  context: CheckContext,
  p: ParsedCheck,
  policy: ResolvedPolicy,
  decision: Decision,
  list: 'allow' | 'deny' | undefined,
): void {
  const event: { -readonly [K in keyof DecisionEvent]: DecisionEvent[K] } = {
    source: 'check',
    domain: '',
    rule: policy.id,
    key: p.key,
    outcome: outcomeOf(decision.allowed, decision.limit, decision.remaining, context.nearLimitRatio),
    limit: decision.limit,
    remaining: decision.remaining,
    resetMs: decision.resetMs,
    atMs: p.atMs,
  };
  if (list !== undefined) event.list = list;
  context.hub.emit(event);
}
