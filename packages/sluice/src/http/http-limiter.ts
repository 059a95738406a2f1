/**
 * The framework-neutral middleware behind every adapter: it decides a request (skip, allow and deny lists, keys, limits
 * or rules, shaping, concurrency) into an `HttpOutcome` that the adapter only has to apply.
 */
import { systemClock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import { type CheckOptions, keyFor, type LimiterDecision, type LimiterKey } from '../limiter/create-limiter.js';
import type { ResolvedLimit } from '../limiter/options.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Store } from '../stores/store.js';
import type { AccessList } from './access-list.js';
import { checkOptions, toAccessList } from './check-options.js';
import { createInflightLimit, type TakePlace } from './concurrency.js';
import { blockedDecision, createControls, LocalBlocks, type RateLimitControls } from './controls.js';
import { createResponseCounting } from './count-by-response.js';
import { type HeaderMode, listedHeaders, type ResetFormat, rateLimitHeaders } from './headers.js';
import { createIdentity } from './identity.js';
import { compileLimits, isEmptySet, type LimitPlan, type LimitSet, NO_PLAN, type SetLimit } from './limits.js';
import type { RateLimitOptions } from './options.js';
import { type HttpOutcome, PASS } from './outcome.js';
import {
  type AppliedLimitInfo,
  appendInfo,
  appliedOf,
  bindingOf,
  giveBackEarlier,
  givenBack,
  previousInfo,
  type RateLimitInfo,
  rebase,
  tookEarlier,
} from './rate-limit-info.js';
import { createRenderer, type RejectionKind, rejectionHeaders, rejectionInfo } from './rejection.js';
import { type Awaitable, type HttpRequestInfo, type RequestAccess, RequestView } from './request.js';
import { createKeyResolver, type Keys, MissingKeyRejection } from './request-keys.js';
import { createRulesCheck } from './rules-check.js';
import { bindingLimit, largestDelay } from './select.js';
import { claimCounters } from './shared-counters.js';

/** The framework-neutral middleware: decides requests; adapters apply the outcome. */
export interface HttpLimiter<Req> extends RateLimitControls {
  /**
   * Decides a request. Synchronous (no promise) on a synchronous store (memory) when no option
   * returns a promise and no request is held for shaping — the fast path.
   */
  decide(req: Req): Awaitable<HttpOutcome>;
  /** The store counters live in. */
  readonly store: Store;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Creates the framework-neutral rate limiter behind every adapter. Options are validated here, once.
 *
 * @param access - how to read the adapter's request.
 * @param extraKeys - option names the adapter accepts besides the common ones (e.g. `handler`).
 * @param claim - false when the adapter shares counters with another of its own limiters on purpose
 *   (a Fastify route that only changes the cost of the plugin's limit).
 * @example
 * const limiter = createHttpLimiter({ limit: 100, period: '1m' }, nodeRequestAccess);
 * const outcome = await limiter.decide(req);
 * const h = outcome.headers;
 * for (let i = 0; i < h.length; i += 2) res.setHeader(h[i], h[i + 1]);
 */
export function createHttpLimiter<Req>(
  options: RateLimitOptions<Req>,
  access: RequestAccess<Req>,
  extraKeys: ReadonlySet<string> = new Set(),
  claim = true,
): HttpLimiter<Req> {
  checkOptions(options, extraKeys, access.name);
  const rules = options.rules;
  const store = rules?.store ?? options.store ?? createMemoryStore();
  const shape = options.mode === 'shape';
  // With rules, the limits come from the rules' `http:` section; there is no plan of our own.
  const plan: LimitPlan<Req> =
    rules === undefined ? compileLimits(options, { store, clock: options.clock, shape }) : NO_PLAN;
  const rulesCheck = rules === undefined ? undefined : createRulesCheck(rules);
  // A store given by the user may be shared with other middlewares: claim this one's counters on it.
  if (claim && options.store !== undefined && plan.fixed !== undefined) {
    const limits = plan.fixed.limiter.limits;
    claimCounters(
      store,
      limits.map((l) => ({
        id: l.policy.id,
        label: `'${l.name}' (${l.policy.algorithm} ${l.policy.limit} per ${l.policy.periodMs} ms)`,
      })),
      options.shared === true,
    );
  }
  const allow = toAccessList(options.allow, 'allow');
  const deny = toAccessList(options.deny, 'deny');
  const headerMode: HeaderMode = options.headers ?? 'both';
  const shadow = options.shadow ?? false;
  const maxDelayMs = options.maxDelayMs ?? 1000;
  const counting = createResponseCounting(options);
  const render = createRenderer(options, (req: Req) => access.header(req, 'accept'));
  if (options.concurrency !== undefined && (shape || rules !== undefined)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', "concurrency: not with mode: 'shape' or rules", {
      option: 'concurrency',
    });
  }
  const inflight = createInflightLimit(options.concurrency, store, options.clock, options.name ?? 'default');
  const blocks = new LocalBlocks();
  const resetFormat: ResetFormat = options.xRateLimitReset ?? 'seconds';
  const epoch = resetFormat === 'epoch';
  const clock = options.clock ?? systemClock;
  const previousOf = (req: Req) =>
    access.rateLimitOf === undefined ? undefined : previousInfo(access.rateLimitOf(req));
  const sleep = options.sleep ?? defaultSleep;
  const limitedStatus = options.statusCode ?? 429;
  const identity = createIdentity(options, access, options.peerAddress ?? access.peer);
  const { skip, onLimited, key: topKey } = options;
  const keysOf = createKeyResolver<Req>(topKey, options.name);
  const fixedCost = typeof options.cost === 'number' ? { cost: options.cost } : undefined;
  const costFn = typeof options.cost === 'function' ? options.cost : undefined;
  const needsInfo =
    skip !== undefined ||
    topKey !== undefined ||
    costFn !== undefined ||
    plan.fixed === undefined ||
    plan.fixed.limits.some((l) => l.key.kind === 'fn');

  function decide(req: Req): Awaitable<HttpOutcome> {
    const ip = identity.clientIp(req);
    const ipKey = ip === '' ? 'unknown' : identity.ipKey(ip);
    // Only built when some option is a function: the plain configuration allocates nothing for it.
    const info = needsInfo ? new RequestView(req, access, ip, ipKey) : (undefined as unknown as HttpRequestInfo);
    if (skip !== undefined) {
      const skipped = skip(req, info);
      if (skipped instanceof Promise) return skipped.then((yes) => (yes ? PASS : lists(req, ip, ipKey, info)));
      if (skipped) return PASS;
    }
    return lists(req, ip, ipKey, info);
  }

  function lists(req: Req, ip: string, ipKey: string, info: HttpRequestInfo): Awaitable<HttpOutcome> {
    if (allow.hasIps && allow.matchesIp(ip)) return PASS;
    if (deny.hasIps && deny.matchesIp(ip)) return reject('denied', undefined, undefined, undefined, req);
    if (rulesCheck !== undefined) return viaRules(rulesCheck, req, ip, info);
    const set = plan.fixed ?? plan.resolve(req, info);
    return set instanceof Promise
      ? set.then((s) => withSet(req, ip, ipKey, info, s))
      : withSet(req, ip, ipKey, info, set);
  }

  function withSet(req: Req, ip: string, ipKey: string, info: HttpRequestInfo, set: LimitSet<Req>) {
    if (isEmptySet(set)) return PASS;
    const key = keysOf(set, req, info, ipKey);
    return key instanceof Promise ? key.then((k) => withKey(req, ip, info, set, k)) : withKey(req, ip, info, set, key);
  }

  function withKey(req: Req, ip: string, info: HttpRequestInfo, set: LimitSet<Req>, key: Keys) {
    if (key === undefined) return PASS;
    if (key instanceof MissingKeyRejection) return reject('missing-key', undefined, key.limitName, undefined, req);
    if (allow.hasKeys && anyKey(key, allow)) return PASS;
    if (deny.hasKeys && anyKey(key, deny)) return reject('denied', undefined, undefined, undefined, req);
    if (blocks.size > 0) {
      const blocked = blockedBy(req, set, key);
      if (blocked !== undefined) return blocked;
    }
    if (costFn === undefined) return check(req, ip, set, key, fixedCost);
    const cost = costFn(req, info);
    return cost instanceof Promise
      ? cost.then((c) => check(req, ip, set, key, { cost: c }))
      : check(req, ip, set, key, { cost });
  }

  function check(req: Req, ip: string, set: LimitSet<Req>, key: LimiterKey, cost: CheckOptions | undefined) {
    if (store.synchronous) return finish(req, ip, set, key, cost, set.limiter.checkSync(key, cost));
    return set.limiter.check(key, cost).then((d) => finish(req, ip, set, key, cost, d));
  }

  function finish(
    req: Req,
    ip: string,
    set: LimitSet<Req>,
    key: LimiterKey,
    cost: CheckOptions | undefined,
    decision: LimiterDecision,
  ): Awaitable<HttpOutcome> {
    const own = appliedOf(set, key, decision);
    if (!decision.allowed) {
      const kind: RejectionKind = decision.reason === 'store-unavailable' ? 'unavailable' : 'limited';
      const name = set.single ? (set.limits[0] as SetLimit<Req>).name : bindingLimit(set, decision).limit.name;
      if (kind === 'limited') onLimited?.({ req, ip, decision, limitName: name, shadow });
      return shadow ? PASS : reject(kind, decision, name, appendInfo(previousOf(req), own), req);
    }
    if (shadow) return PASS;
    if (inflight !== undefined) return withPlace(inflight, req, ip, set, key, cost, decision, own);
    // What this middleware took, on the info: a later middleware that rejects the request gives it back.
    const info = appendInfo(previousOf(req), own, set.limiter, key, cost);
    const outcome: HttpOutcome = {
      pass: true,
      headers: headersOf(info),
      status: 0,
      body: '',
      contentType: '',
      rejection: undefined,
      decision,
      info,
      afterResponse:
        counting === undefined ? undefined : settled(req, info, counting(req, set.limiter, key, cost?.cost ?? 1)),
    };
    if (!shape) return outcome;
    const delayMs = largestDelay(decision);
    if (delayMs > maxDelayMs) {
      // The queue is longer than the caller will wait: give the place back and turn the request away.
      // Any request now would queue at least as long, so none remains; once the place is back, the
      // queue empties when the requests ahead have drained, i.e. after this request's delay.
      const { limit, decision: bound } = bindingLimit(set, decision);
      const over: LimiterDecision = {
        ...bound,
        allowed: false,
        remaining: 0,
        resetMs: delayMs,
        retryAfterMs: delayMs - maxDelayMs,
      };
      onLimited?.({ req, ip, decision: over, limitName: limit.name, shadow: false });
      const overInfo = appendInfo(previousOf(req), [
        { name: limit.name, header: limit.header, decision: over, key: keyFor(key, limit.name) },
      ]);
      return set.limiter.refund(key, cost).then(() => reject('limited', over, limit.name, overInfo, req));
    }
    return delayMs > 0 ? sleep(delayMs).then(() => outcome) : outcome;
  }

  /** The rejection of a request whose key `block()` blocked, or undefined. */
  function blockedBy(req: Req, set: LimitSet<Req>, key: LimiterKey): Awaitable<HttpOutcome> | undefined {
    const nowMs = clock.now();
    for (const limit of set.limits) {
      const k = keyFor(key, limit.name);
      const ms = k === undefined ? 0 : blocks.remaining(k, nowMs);
      if (ms > 0) {
        const decision = blockedDecision(limit.header.quota, ms);
        const info = appendInfo(previousOf(req), [{ name: limit.name, header: limit.header, decision, key: k }]);
        return reject('limited', decision, limit.name, info, req);
      }
    }
    return undefined;
  }

  /**
   * The concurrency limit, after the rate limits passed: a place is taken (and given back when the
   * response is done), or the request is rejected and what the rate limits took is given back.
   */
  async function withPlace(
    take: TakePlace,
    req: Req,
    ip: string,
    set: LimitSet<Req>,
    key: LimiterKey,
    cost: CheckOptions | undefined,
    decision: LimiterDecision,
    own: AppliedLimitInfo[],
  ): Promise<HttpOutcome> {
    const placeKey = typeof key === 'string' ? key : (Object.values(key).find((k) => typeof k === 'string') ?? ip);
    const taken = await take(placeKey);
    if (!taken.ok) {
      await set.limiter.refund(key, cost);
      const info = appendInfo(previousOf(req), [...own, taken.applied]);
      onLimited?.({ req, ip, decision: taken.applied.decision, limitName: taken.applied.name, shadow: false });
      return reject('limited', taken.applied.decision, taken.applied.name, info, req);
    }
    const info = appendInfo(previousOf(req), [...own, taken.inflight.applied], set.limiter, key, cost, own);
    const counting0 = counting?.(req, set.limiter, key, cost?.cost ?? 1);
    const counted = counting0 === undefined ? undefined : settled(req, info, counting0);
    const release = taken.inflight.release;
    return {
      pass: true,
      headers: headersOf(info),
      status: 0,
      body: '',
      contentType: '',
      rejection: undefined,
      decision,
      info,
      afterResponse: async (status) => {
        await release();
        await counted?.(status);
      },
    };
  }

  /** The headers of every limit applied so far; one limit (the usual case) takes the short path. */
  function headersOf(info: RateLimitInfo): string[] {
    const nowMs = epoch ? clock.now() : 0;
    if (info.limits.length === 1) {
      const only = info.limits[0] as AppliedLimitInfo;
      return rateLimitHeaders(only.decision, only.header, headerMode, resetFormat, nowMs);
    }
    return listedHeaders(info.limits, bindingOf(info), headerMode, resetFormat, nowMs);
  }

  /**
   * A response's settling by status (skipFailedRequests, responseCost), unless a later middleware
   * rejected the request and gave back what this one took (settling it again would give it twice).
   */
  function settled(req: Req, mine: RateLimitInfo, counted: (status: number) => Promise<void>) {
    return (status: number) => (givenBack(previousOf(req), mine) ? Promise.resolve() : counted(status));
  }

  /**
   * The rejection, after giving back what earlier sluice middlewares took for the request: a rejected
   * request consumes nothing, across stacked middlewares (and a Fastify route's limit and the plugin's).
   */
  function reject(
    kind: RejectionKind,
    decision: LimiterDecision | undefined,
    limitName: string | undefined,
    info: RateLimitInfo | undefined,
    req: Req,
  ): Awaitable<HttpOutcome> {
    const previous = previousOf(req);
    if (previous === undefined || !tookEarlier(previous)) return rejectNow(kind, decision, limitName, info, req);
    return giveBackEarlier(previous).then((restored) => {
      // Without info of its own (a deny list, a missing key), the restored info goes on the request, so
      // the earlier middlewares see that they gave back.
      const after = info === undefined ? restored : rebase(info, previous, restored as RateLimitInfo);
      return rejectNow(kind, decision, limitName, after, req);
    });
  }

  function rejectNow(
    kind: RejectionKind,
    decision: LimiterDecision | undefined,
    limitName: string | undefined,
    info: RateLimitInfo | undefined,
    req: Req,
  ): HttpOutcome {
    const rejection = rejectionInfo(kind, decision, limitName, limitedStatus);
    let headers: string[];
    if (kind === 'limited' && info !== undefined) {
      headers = headersOf(info);
      if (rejection.retryAfter !== null) headers.push('retry-after', String(rejection.retryAfter));
    } else {
      headers = rejectionHeaders(rejection);
    }
    const { body, contentType } = render(rejection, req);
    return {
      pass: false,
      headers,
      status: rejection.status,
      body,
      contentType,
      rejection,
      decision,
      info,
      afterResponse: undefined,
    };
  }

  async function viaRules(
    check: NonNullable<typeof rulesCheck>,
    req: Req,
    ip: string,
    info: HttpRequestInfo,
  ): Promise<HttpOutcome> {
    const cost = costFn === undefined ? (fixedCost?.cost ?? 1) : await costFn(req, info);
    const verdict = await check({
      method: access.method(req),
      url: access.url(req),
      headers: access.headers(req),
      ip,
      cost,
    });
    if (verdict === undefined) return PASS;
    for (const status of verdict.shadowed) {
      if (status.decision !== undefined && !status.decision.allowed) {
        const name = status.ruleName ?? status.ruleId ?? verdict.limitName;
        onLimited?.({ req, ip, decision: status.decision, limitName: name, shadow: true });
      }
    }
    const decision = verdict.decision;
    const name = verdict.limitName;
    const own = [{ name, header: verdict.header, decision, key: undefined }];
    if (!decision.allowed) {
      const kind: RejectionKind = decision.reason === 'store-unavailable' ? 'unavailable' : 'limited';
      if (kind === 'limited') onLimited?.({ req, ip, decision, limitName: name, shadow });
      return shadow ? PASS : reject(kind, decision, name, appendInfo(previousOf(req), own), req);
    }
    if (shadow) return PASS;
    const result = appendInfo(previousOf(req), own);
    return {
      pass: true,
      headers: headersOf(result),
      status: 0,
      body: '',
      contentType: '',
      rejection: undefined,
      decision,
      info: result,
      afterResponse: undefined,
    };
  }

  const controls = createControls(plan, rules !== undefined, blocks, clock);

  // The plain configuration — one fixed limit keyed by client IP, on the memory store, nothing computed
  // per request — skips every step that would do nothing and asks the store directly (no promise, no
  // failure wrapper: the memory store cannot be unavailable). This is the path that must cost next to
  // nothing next to the framework itself.
  const fixed = plan.fixed;
  const fast =
    rules === undefined &&
    fixed !== undefined &&
    fixed.single &&
    !needsInfo &&
    store.synchronous &&
    options.allow === undefined &&
    options.deny === undefined &&
    counting === undefined &&
    inflight === undefined &&
    !shape;
  if (fast) {
    const policy = (fixed.limiter.limits[0] as ResolvedLimit).policy;
    const clock = fixed.limiter.clock;
    const costUnits = fixedCost?.cost ?? 1;
    return {
      ...controls,
      store,
      decide(req) {
        // A key blocked by block() is looked up on the general path; until then, none is.
        if (blocks.size > 0) return decide(req);
        const ip = identity.clientIp(req);
        const key = ip === '' ? 'unknown' : identity.ipKey(ip);
        const decision = store.check(key, policy, costUnits, clock.now(), true) as LimiterDecision;
        return finish(req, ip, fixed, key, fixedCost, decision);
      },
    };
  }
  return { ...controls, decide, store };
}

function anyKey(key: LimiterKey, list: AccessList): boolean {
  if (typeof key === 'string') return list.matchesKey(key);
  for (const name in key) {
    const k = key[name];
    if (typeof k === 'string' && list.matchesKey(k)) return true;
  }
  return false;
}

export type { HttpOutcome };
export { PASS };
