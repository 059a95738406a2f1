import { SluiceError } from '../core/errors.js';
import type { CheckOptions, LimiterDecision, LimiterKey } from '../limiter/create-limiter.js';
import type { ResolvedLimit } from '../limiter/options.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Store } from '../stores/store.js';
import { type AccessList, createAccessList, isAccessList } from './access-list.js';
import { createClientIpResolver } from './client-ip.js';
import { type HeaderList, type HeaderMode, rateLimitHeaders } from './headers.js';
import { compileLimits, isEmptySet, type LimitPlan, type LimitSet, NO_PLAN, type SetLimit } from './limits.js';
import { RATE_LIMIT_OPTION_KEYS, type RateLimitOptions } from './options.js';
import {
  defaultBody,
  defaultMessage,
  type RejectionInfo,
  type RejectionKind,
  rejectionHeaders,
  rejectionInfo,
} from './rejection.js';
import { type Awaitable, type HttpRequestInfo, type RequestAccess, RequestView } from './request.js';
import { createRulesCheck } from './rules-check.js';
import { bindingLimit, largestDelay } from './select.js';

/** What to do with a request: pass it on (setting `headers`), or answer it with `status`, `headers`, `body`. */
export interface HttpOutcome {
  /** True: continue to the handler, after setting `headers` on the response. */
  readonly pass: boolean;
  /** Headers to set, on a pass as on a rejection: `[name1, value1, name2, value2, …]`. */
  readonly headers: HeaderList;
  /** Status of a rejection (429, 403, 503); 0 on a pass. */
  readonly status: number;
  /** Body of a rejection; `''` on a pass. */
  readonly body: string;
  /** Content type of the body; `''` on a pass. */
  readonly contentType: string;
  /** The facts of a rejection, for custom handlers. */
  readonly rejection: RejectionInfo | undefined;
  /** The limiter's decision, when the request was checked. */
  readonly decision: LimiterDecision | undefined;
}

/** The framework-neutral middleware: decides requests; adapters apply the outcome. */
export interface HttpLimiter<Req> {
  /**
   * Decides a request. Synchronous (no promise) on a synchronous store (memory) when no option
   * returns a promise and no request is held for shaping — the fast path.
   */
  decide(req: Req): Awaitable<HttpOutcome>;
  /** The store counters live in. */
  readonly store: Store;
}

const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain; charset=utf-8';
/** The outcome of a request no limit applies to (skipped, allow-listed, keyless) or in shadow mode. */
export const PASS: HttpOutcome = Object.freeze({
  pass: true,
  headers: Object.freeze([]) as HeaderList,
  status: 0,
  body: '',
  contentType: '',
  rejection: undefined,
  decision: undefined,
});

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Creates the framework-neutral rate limiter behind every adapter. Options are validated here, once.
 *
 * @param access - how to read the adapter's request.
 * @param extraKeys - option names the adapter accepts besides the common ones (e.g. `handler`).
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
): HttpLimiter<Req> {
  checkOptions(options, extraKeys);
  const rules = options.rules;
  const store = rules?.store ?? options.store ?? createMemoryStore();
  const shape = options.mode === 'shape';
  // With rules, the limits come from the rules' `http:` section; there is no plan of our own.
  const plan: LimitPlan<Req> =
    rules === undefined ? compileLimits(options, { store, clock: options.clock, shape }) : NO_PLAN;
  const rulesCheck = rules === undefined ? undefined : createRulesCheck(rules);
  const resolver = createClientIpResolver(options);
  const allow = toAccessList(options.allow, 'allow');
  const deny = toAccessList(options.deny, 'deny');
  const headerMode: HeaderMode = options.headers ?? 'both';
  const shadow = options.shadow ?? false;
  const maxDelayMs = options.maxDelayMs ?? 1000;
  const sleep = options.sleep ?? defaultSleep;
  const limitedStatus = options.statusCode ?? 429;
  const peer = options.peerAddress ?? access.peer;
  const { skip, onLimited, key: topKey } = options;
  const fixedCost = typeof options.cost === 'number' ? { cost: options.cost } : undefined;
  const costFn = typeof options.cost === 'function' ? options.cost : undefined;
  const needsInfo =
    skip !== undefined ||
    topKey !== undefined ||
    costFn !== undefined ||
    plan.fixed === undefined ||
    plan.fixed.limits.some((l) => l.key.kind === 'fn');

  function decide(req: Req): Awaitable<HttpOutcome> {
    const ip = resolver.clientIp(peer(req), req, access.header);
    const ipKey = ip === '' ? 'unknown' : resolver.ipKey(ip);
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
    if (deny.hasIps && deny.matchesIp(ip)) return reject('denied', undefined, undefined, req);
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

  function keysOf(
    set: LimitSet<Req>,
    req: Req,
    info: HttpRequestInfo,
    ipKey: string,
  ): Awaitable<LimiterKey | undefined> {
    const base = topKey === undefined ? ipKey : topKey(req, info);
    if (set.single) return base instanceof Promise ? base.then(orUndefined) : orUndefined(base);
    const names: string[] = [];
    const values: Awaitable<string | null | undefined>[] = [];
    let async = base instanceof Promise;
    for (const limit of set.limits) {
      const k = limit.key;
      const value = k.kind === 'default' ? base : k.kind === 'fn' ? k.fn(req, info) : k.key;
      if (value instanceof Promise) async = true;
      names.push(limit.name);
      values.push(value);
    }
    const toObject = (vs: readonly (string | null | undefined)[]): LimiterKey | undefined => {
      const keys: Record<string, string | null | undefined> = {};
      let any = false;
      for (const [i, v] of vs.entries()) {
        keys[names[i] as string] = v;
        if (v !== null && v !== undefined) any = true;
      }
      return any ? keys : undefined;
    };
    return async ? Promise.all(values).then(toObject) : toObject(values as (string | null | undefined)[]);
  }

  function withKey(req: Req, ip: string, info: HttpRequestInfo, set: LimitSet<Req>, key: LimiterKey | undefined) {
    if (key === undefined) return PASS;
    if (allow.hasKeys && anyKey(key, allow)) return PASS;
    if (deny.hasKeys && anyKey(key, deny)) return reject('denied', undefined, undefined, req);
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
    let limit: SetLimit<Req>;
    let bound: LimiterDecision;
    if (set.single) {
      limit = set.limits[0] as SetLimit<Req>;
      bound = decision;
    } else {
      const binding = bindingLimit(set, decision);
      limit = binding.limit;
      bound = binding.decision;
    }
    if (!decision.allowed) {
      const kind: RejectionKind = decision.reason === 'store-unavailable' ? 'unavailable' : 'limited';
      if (kind === 'limited') onLimited?.({ req, ip, decision, limitName: limit.name, shadow });
      return shadow ? PASS : reject(kind, bound, limit, req);
    }
    if (shadow) return PASS;
    const outcome: HttpOutcome = {
      pass: true,
      headers: rateLimitHeaders(bound, limit.header, headerMode),
      status: 0,
      body: '',
      contentType: '',
      rejection: undefined,
      decision,
    };
    if (!shape) return outcome;
    const delayMs = largestDelay(decision);
    if (delayMs > maxDelayMs) {
      // The queue is longer than the caller will wait: give the place back and turn the request away.
      // Any request now would queue at least as long, so none remains; once the place is back, the
      // queue empties when the requests ahead have drained, i.e. after this request's delay.
      const over: LimiterDecision = {
        ...bound,
        allowed: false,
        remaining: 0,
        resetMs: delayMs,
        retryAfterMs: delayMs - maxDelayMs,
      };
      onLimited?.({ req, ip, decision: over, limitName: limit.name, shadow: false });
      return set.limiter.refund(key, cost).then(() => reject('limited', over, limit, req));
    }
    return delayMs > 0 ? sleep(delayMs).then(() => outcome) : outcome;
  }

  function reject(
    kind: RejectionKind,
    decision: LimiterDecision | undefined,
    limit: SetLimit<Req> | undefined,
    req: Req,
  ): HttpOutcome {
    const rejection = rejectionInfo(kind, decision, limit?.name, limitedStatus);
    let headers: string[];
    if (kind === 'limited' && decision !== undefined && limit !== undefined) {
      headers = rateLimitHeaders(decision, limit.header, headerMode);
      if (rejection.retryAfter !== null) headers.push('retry-after', String(rejection.retryAfter));
    } else {
      headers = rejectionHeaders(rejection);
    }
    const { body, contentType } = render(rejection, req);
    return { pass: false, status: rejection.status, headers, body, contentType, rejection, decision };
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
    const limit: SetLimit<Req> = { name: verdict.limitName, header: verdict.header, key: { kind: 'default' } };
    const decision = verdict.decision;
    if (!decision.allowed) {
      const kind: RejectionKind = decision.reason === 'store-unavailable' ? 'unavailable' : 'limited';
      if (kind === 'limited') onLimited?.({ req, ip, decision, limitName: limit.name, shadow });
      return shadow ? PASS : reject(kind, decision, limit, req);
    }
    if (shadow) return PASS;
    return {
      pass: true,
      headers: rateLimitHeaders(decision, limit.header, headerMode),
      status: 0,
      body: '',
      contentType: '',
      rejection: undefined,
      decision,
    };
  }

  function render(rejection: RejectionInfo, req: Req): { body: string; contentType: string } {
    if (options.body !== undefined) {
      const custom = options.body(rejection, req);
      if (typeof custom === 'string') return { body: custom, contentType: TEXT_TYPE };
      return { body: JSON.stringify(custom), contentType: JSON_TYPE };
    }
    const m = options.message;
    if (typeof m === 'function')
      return { body: JSON.stringify(defaultBody(rejection, m(rejection))), contentType: JSON_TYPE };
    // The default body depends only on the kind and the wait: under attack the same few are sent
    // over and over, so each is formatted once.
    const id = `${rejection.kind}:${rejection.retryAfter}`;
    let body = bodies.get(id);
    if (body === undefined) {
      body = JSON.stringify(defaultBody(rejection, m ?? defaultMessage(rejection)));
      if (bodies.size >= 1000) bodies.clear();
      bodies.set(id, body);
    }
    return { body, contentType: JSON_TYPE };
  }
  const bodies = new Map<string, string>();

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
    !shape;
  if (fast) {
    const policy = (fixed.limiter.limits[0] as ResolvedLimit).policy;
    const clock = fixed.limiter.clock;
    const costUnits = fixedCost?.cost ?? 1;
    return {
      store,
      decide(req) {
        const ip = resolver.clientIp(peer(req), req, access.header);
        const key = ip === '' ? 'unknown' : resolver.ipKey(ip);
        const decision = store.check(key, policy, costUnits, clock.now(), true) as LimiterDecision;
        return finish(req, ip, fixed, key, fixedCost, decision);
      },
    };
  }
  return { decide, store };
}

function orUndefined(value: string | null | undefined): string | undefined {
  return value === null ? undefined : value;
}

function anyKey(key: LimiterKey, list: AccessList): boolean {
  if (typeof key === 'string') return list.matchesKey(key);
  for (const name in key) {
    const k = key[name];
    if (typeof k === 'string' && list.matchesKey(k)) return true;
  }
  return false;
}

function toAccessList(value: readonly string[] | AccessList | undefined, option: string): AccessList {
  if (value === undefined) return createAccessList();
  if (isAccessList(value)) return value;
  if (!Array.isArray(value)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${option}: expected an array of IPs, CIDRs and keys`, {
      option,
    });
  }
  try {
    return createAccessList(value);
  } catch (error) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${option}: ${(error as Error).message}`, { option });
  }
}

function checkOptions<Req>(options: RateLimitOptions<Req>, extraKeys: ReadonlySet<string>): void {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'rateLimit: expected an options object');
  }
  for (const k of Object.keys(options)) {
    if (!RATE_LIMIT_OPTION_KEYS.has(k) && !extraKeys.has(k)) {
      throw new SluiceError(
        'ERR_SLUICE_UNKNOWN_OPTION',
        `${k}: unknown option of rateLimit (known: ${[...RATE_LIMIT_OPTION_KEYS, ...extraKeys].join(', ')})`,
        { option: k },
      );
    }
  }
  const fn = (name: keyof RateLimitOptions<Req>) => {
    const v = options[name];
    if (v !== undefined && typeof v !== 'function') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${name}: expected a function`, { option: name });
    }
  };
  for (const name of ['key', 'skip', 'body', 'onLimited', 'sleep', 'peerAddress'] as const) fn(name);
  const oneOf = (name: keyof RateLimitOptions<Req>, allowed: readonly unknown[]) => {
    const v = options[name];
    if (v !== undefined && !allowed.includes(v)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `${name}: ${JSON.stringify(v)} is not one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`,
        { option: name },
      );
    }
  };
  oneOf('mode', ['reject', 'shape']);
  oneOf('headers', ['x', 'draft', 'both', false]);
  oneOf('fail', ['open', 'closed', 'insurance']);
  oneOf('shadow', [true, false]);
  const { cost, maxDelayMs, statusCode, message } = options;
  if (cost !== undefined && typeof cost !== 'function' && !(Number.isInteger(cost) && cost >= 0 && cost <= 1e9)) {
    throw new SluiceError('ERR_SLUICE_INVALID_COST', `cost: ${String(cost)} is not a whole number ≥ 0 or a function`, {
      option: 'cost',
    });
  }
  if (maxDelayMs !== undefined && !(Number.isInteger(maxDelayMs) && maxDelayMs >= 0)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `maxDelayMs: ${String(maxDelayMs)} is not a whole number ≥ 0`, {
      option: 'maxDelayMs',
    });
  }
  if (statusCode !== undefined && !(Number.isInteger(statusCode) && statusCode >= 400 && statusCode <= 599)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `statusCode: ${String(statusCode)} is not a 4xx or 5xx status`, {
      option: 'statusCode',
    });
  }
  if (message !== undefined && typeof message !== 'string' && typeof message !== 'function') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'message: expected a string or a function', {
      option: 'message',
    });
  }
  if (options.rules !== undefined) {
    const rules = options.rules as { shouldRateLimit?: unknown; ruleSet?: unknown };
    if (typeof rules !== 'object' || rules === null || typeof rules.shouldRateLimit !== 'function') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        'rules: expected a rules engine (createRulesEngine from sluice/rules)',
        {
          option: 'rules',
        },
      );
    }
    const clash = ['limit', 'period', 'algorithm', 'burst', 'blockDuration', 'limits', 'key', 'store'].filter(
      (k) => options[k as keyof RateLimitOptions<Req>] !== undefined,
    );
    if (clash.length > 0 || options.mode === 'shape') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `rules: the rules decide limits, keys and store; drop ${clash.length > 0 ? clash.join(', ') : "mode: 'shape'"}`,
        { option: 'rules' },
      );
    }
  }
  if (options.mode !== 'shape' && (options.maxDelayMs !== undefined || options.sleep !== undefined)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', "maxDelayMs, sleep: only apply with mode: 'shape'", {
      option: options.maxDelayMs !== undefined ? 'maxDelayMs' : 'sleep',
    });
  }
}
