/**
 * The general request path of a middleware: skip, the allow and deny lists, the request's limits and keys, blocked
 * keys and the cost, then the store. Each step stays synchronous while every option it calls does.
 */
import { type CheckOptions, keyFor, type LimiterKey } from '../limiter/create-limiter.js';
import type { AccessList } from './access-list.js';
import { blockedDecision } from './controls.js';
import type { DecisionStep } from './decision-step.js';
import { isEmptySet, type LimitSet } from './limits.js';
import type { MiddlewareSettings } from './middleware-settings.js';
import { type HttpOutcome, PASS } from './outcome.js';
import { appendInfo, appliedLimit } from './rate-limit-info.js';
import { type Awaitable, type HttpRequestInfo, RequestView } from './request.js';
import { type Keys, MissingKeyRejection } from './request-keys.js';
import type { Responder } from './responder.js';
import { createRulesPath } from './rules-path.js';

/** Creates the general `decide` of a middleware with settings `s`; `finish` takes the store's decision. */
export function createRequestPath<Req>(
  s: MiddlewareSettings<Req>,
  respond: Responder<Req>,
  finish: DecisionStep<Req>,
): (req: Req) => Awaitable<HttpOutcome> {
  const { identity, needsInfo, skip, allow, deny, plan, keysOf, blocks, costFn, fixedCost, store, access } = s;
  const viaRules = s.rulesCheck === undefined ? undefined : createRulesPath(s, respond, s.rulesCheck);

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
    if (deny.hasIps && deny.matchesIp(ip)) return respond.reject('denied', undefined, undefined, undefined, req);
    if (viaRules !== undefined) return viaRules(req, ip, info);
    const set = plan.fixed ?? plan.resolve(req, info);
    return set instanceof Promise
      ? set.then((resolved) => withSet(req, ip, ipKey, info, resolved))
      : withSet(req, ip, ipKey, info, set);
  }

  function withSet(req: Req, ip: string, ipKey: string, info: HttpRequestInfo, set: LimitSet<Req>) {
    if (isEmptySet(set)) return PASS;
    const key = keysOf(set, req, info, ipKey);
    return key instanceof Promise ? key.then((k) => withKey(req, ip, info, set, k)) : withKey(req, ip, info, set, key);
  }

  function withKey(req: Req, ip: string, info: HttpRequestInfo, set: LimitSet<Req>, key: Keys) {
    if (key === undefined) return PASS;
    if (key instanceof MissingKeyRejection)
      return respond.reject('missing-key', undefined, key.limitName, undefined, req);
    if (allow.hasKeys && anyKey(key, allow)) return PASS;
    if (deny.hasKeys && anyKey(key, deny)) return respond.reject('denied', undefined, undefined, undefined, req);
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

  /** The rejection of a request whose key `block()` blocked, or undefined. */
  function blockedBy(req: Req, set: LimitSet<Req>, key: LimiterKey): Awaitable<HttpOutcome> | undefined {
    const nowMs = s.clock.now();
    for (const limit of set.limits) {
      const k = keyFor(key, limit.name);
      const ms = k === undefined ? 0 : blocks.remaining(k, nowMs);
      if (ms > 0) {
        const decision = blockedDecision(limit.header.quota, ms);
        const info = appendInfo(s.previousOf(req), [appliedLimit(limit, decision, k)]);
        return respond.reject('limited', decision, limit.name, info, req);
      }
    }
    return undefined;
  }

  return decide;
}

function anyKey(key: LimiterKey, list: AccessList): boolean {
  if (typeof key === 'string') return list.matchesKey(key);
  for (const name in key) {
    const k = key[name];
    if (typeof k === 'string' && list.matchesKey(k)) return true;
  }
  return false;
}
