/**
 * `sluice/hono` on edge runtimes — what a bundler picks under the `workerd`, `worker` and `edge-light` conditions
 * (Cloudflare Workers, Vercel Edge). The same `rateLimit(options)` as everywhere, with the options an edge app uses
 * (limits, keys, costs, headers, shadow, fail open/closed, any store), made of the same parts as the full middleware —
 * policies, algorithms, headers, `c.get('rateLimit')`, giving back across stacked middlewares — in about a third of
 * its bytes. An option it does not carry is an error at creation (`ERR_SLUICE_EDGE_OPTION`) that names
 * `sluice/hono/full`, which has them all.
 * @packageDocumentation
 */
import type { Context, MiddlewareHandler, Next } from 'hono';
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import { normalize } from '../../http/client-ip.js';
import type { RateLimitControls } from '../../http/controls.js';
import { listedHeaders, rateLimitHeaders } from '../../http/headers.js';
import { keyText } from '../../http/keys.js';
import type { RateLimitOptions } from '../../http/options.js';
import {
  type AppliedLimitInfo,
  appendInfo,
  bindingOf,
  giveBackEarlier,
  previousInfo,
  type RateLimitInfo,
  tookEarlier,
} from '../../http/rate-limit-info.js';
import { defaultBody, defaultMessage, type RejectionInfo, rejectionInfo } from '../../http/rejection.js';
import type { HttpRequestInfo } from '../../http/request.js';
import { claimCounters } from '../../http/shared-counters.js';
import { warnOnce } from '../../http/warn.js';
import { combineDecisions } from '../../limiter/combine.js';
import { closedDecision, isStoreFailure, openDecision } from '../../limiter/failure-policy.js';
import { createCompactMemoryStore } from '../../stores/memory/compact-store.js';
import type { StoreItem } from '../../stores/store.js';
import { createEdgeControls } from './edge-controls.js';
import { createIpKey } from './edge-ip.js';
import { checkEdgeOptions, type EdgeLimit, type EdgePolicy, edgeLimits } from './edge-limits.js';
import type { HonoRateLimitOptions } from './options.js';
import { createPeerReader } from './peer.js';

/** A limit as it applies to one request: its policy and the key it counts under. */
interface Applied extends EdgePolicy {
  readonly name: string;
  readonly key: string;
}

function setAll(target: Headers, headers: readonly string[]): void {
  for (let i = 0; i < headers.length; i += 2) target.set(headers[i] as string, headers[i + 1] as string);
}

/** The headers of every limit applied so far (one limit, the usual case, the short way). */
function headersOf(info: RateLimitInfo, mode: NonNullable<RateLimitOptions['headers']>): string[] {
  const only = info.limits.length === 1 ? (info.limits[0] as AppliedLimitInfo) : undefined;
  return only !== undefined
    ? rateLimitHeaders(only.decision, only.header, mode)
    : listedHeaders(info.limits, bindingOf(info), mode, 'seconds', 0);
}

/**
 * Creates Hono middleware that limits requests and sets rate-limit headers (the edge build).
 *
 * @example
 * import { Hono } from 'hono';
 * import { rateLimit } from 'sluice/hono';
 * const app = new Hono();
 * app.use(rateLimit({ limit: 100, period: '1m' }));
 */
export function rateLimit(options: HonoRateLimitOptions): MiddlewareHandler & RateLimitControls {
  checkEdgeOptions(options);
  const limits = edgeLimits(options);
  // An isolate has 128 MB: the default store keeps to a quarter of it (sliding logs grow with their requests).
  const store = options.store ?? createCompactMemoryStore({ maxKeys: 100_000, maxBytes: 32 * 1024 * 1024 });
  if (options.store !== undefined && limits.every((l) => l.fixed !== undefined)) {
    const claims = limits.map(({ name, fixed }) => {
      const p = (fixed as EdgePolicy).policy;
      return { id: p.id, label: `'${name}' (${p.algorithm} ${p.limit} per ${p.periodMs} ms)` };
    });
    claimCounters(store, claims, options.shared === true);
  }
  const now = options.clock?.now ?? Date.now;
  const mode = options.headers ?? 'both';
  const peerOf = options.peerAddress ?? createPeerReader(options);
  const ipKeyOf = createIpKey(options.ipv6Subnet);
  const blocks = new Map<string, number>();

  /** The policy of a limit for this request (a limit that is a function of it is made once per value). */
  const made = new Map<string, EdgePolicy>();
  async function policyOf(limit: EdgeLimit, c: Context, info: HttpRequestInfo): Promise<EdgePolicy> {
    if (limit.fixed !== undefined) return limit.fixed;
    const value = await (limit.limitFn as NonNullable<EdgeLimit['limitFn']>)(c, info);
    const id = `${limit.name}\n${value}`;
    let p = made.get(id);
    if (p === undefined) {
      p = limit.policyFor(value);
      if (made.size >= 1000) made.clear();
      made.set(id, p);
    }
    return p;
  }

  /** The limits that apply to this request with their keys; the rejection of a missing key under `'reject'`. */
  async function applied(c: Context, info: HttpRequestInfo): Promise<Applied[] | RejectionInfo> {
    const base = options.key === undefined ? info.ipKey : await options.key(c, info);
    const out: Applied[] = [];
    for (const limit of limits) {
      let key = keyText(limit.keyFn === undefined ? base : await limit.keyFn(c, info), limit.keyOption);
      if (key === undefined && limit.missing === 'reject')
        return rejectionInfo('missing-key', undefined, limit.name, 400);
      if (key === undefined && limit.missing === 'ip') key = info.ipKey;
      if (key !== undefined) out.push({ name: limit.name, key, ...(await policyOf(limit, c, info)) });
    }
    if (out.length === 0)
      warnOnce(
        'SLUICE_MISSING_KEY_SKIPPED',
        `sluice: ${info.method} ${info.path} was not counted (its key was missing and missingKey is 'skip'); if not meant, use missingKey: 'ip' or 'reject'`,
      );
    return out;
  }

  /** The store's decisions, or the failure policy's when it fails (a misuse is thrown on). */
  async function decide(items: StoreItem[], nowMs: number): Promise<Decision[]> {
    try {
      // One limit through check, as the full middleware's limiter does: a store may treat a blocked key differently.
      const [one] = items;
      if (items.length === 1 && one !== undefined)
        return [await store.check(one.key, one.policy, one.cost, nowMs, true)];
      return await store.checkMany(items, nowMs, true);
    } catch (error) {
      if (!isStoreFailure(error)) throw error;
      const fail = options.fail === 'closed' ? closedDecision : openDecision;
      return items.map((i) => fail(i.policy.limit, i.policy.periodMs));
    }
  }

  /** A rejection: what earlier sluice middlewares took is given back first, so a rejected request consumes nothing. */
  async function reject(c: Context, rejection: RejectionInfo, own: AppliedLimitInfo[]): Promise<Response> {
    const previous = previousInfo(c.get('rateLimit'));
    const before = tookEarlier(previous) ? await giveBackEarlier(previous) : previous;
    const info = own.length > 0 ? appendInfo(before, own) : before;
    if (info !== undefined) c.set('rateLimit', info);
    const headers = rejection.kind === 'limited' && info !== undefined && mode !== false ? headersOf(info, mode) : [];
    if (rejection.retryAfter !== null) headers.push('retry-after', String(rejection.retryAfter));
    if (options.handler !== undefined) {
      const res = await options.handler(c, rejection);
      const copy = new Response(res.body, res);
      setAll(copy.headers, headers);
      return copy;
    }
    const m = options.message;
    const message = typeof m === 'function' ? m(rejection) : (m ?? defaultMessage(rejection));
    const response = new Response(JSON.stringify(defaultBody(rejection, message)), { status: rejection.status });
    setAll(response.headers, headers);
    response.headers.set('content-type', 'application/json');
    return response;
  }

  async function sluiceRateLimit(c: Context, next: Next) {
    const peer = peerOf(c);
    const ip = peer === undefined || peer === '' ? '' : normalize(peer);
    const ipKey = ip === '' ? 'unknown' : ipKeyOf(ip);
    const info: HttpRequestInfo = {
      ip,
      ipKey,
      method: c.req.method,
      path: c.req.path,
      header: (name) => c.req.header(name),
    };
    if (options.skip !== undefined && (await options.skip(c, info))) return next();
    const list = await applied(c, info);
    if (!Array.isArray(list)) return reject(c, list, []);
    if (list.length === 0) return next();
    const nowMs = now();
    for (const a of list) {
      const ms = (blocks.get(a.key) ?? 0) - nowMs;
      if (ms > 0) {
        const decision: Decision = {
          allowed: false,
          limit: a.header.quota,
          remaining: 0,
          resetMs: ms,
          retryAfterMs: ms,
          reason: 'blocked',
        };
        return reject(c, rejectionInfo('limited', decision, a.name, options.statusCode ?? 429), [
          { name: a.name, header: a.header, decision, key: a.key },
        ]);
      }
    }
    const cost = typeof options.cost === 'function' ? await options.cost(c, info) : (options.cost ?? 1);
    if (!(Number.isInteger(cost) && cost >= 0 && cost <= 1e9))
      throw new SluiceError('ERR_SLUICE_INVALID_COST', `cost: ${String(cost)} is not a whole number between 0 and 1e9`);
    const items = list.map((a) => ({ key: a.key, policy: a.policy, cost }));
    const decisions = await decide(items, nowMs);
    const own = list.map((a, i) => ({
      name: a.name,
      header: a.header,
      decision: decisions[i] as Decision,
      key: a.key,
    }));
    const binding = combineDecisions(decisions);
    if (!binding.allowed) {
      const name = own.find((o) => o.decision === binding)?.name;
      const kind = binding.reason === 'store-unavailable' ? 'unavailable' : 'limited';
      if (kind === 'limited')
        options.onLimited?.({
          req: c,
          ip,
          decision: binding,
          limitName: name as string,
          shadow: options.shadow === true,
        });
      if (options.shadow === true) return next();
      return reject(c, rejectionInfo(kind, binding, name, options.statusCode ?? 429), own);
    }
    if (options.shadow === true) return next();
    // What this middleware took, on the info: a later one that rejects the request gives it back.
    const giveBack = {
      refund: async () => {
        await Promise.all(items.map((i) => store.refund(i.key, i.policy, i.cost, now(), nowMs)));
      },
    };
    const mine = appendInfo(previousInfo(c.get('rateLimit')), own, giveBack, '', { cost });
    c.set('rateLimit', mine);
    await next();
    // A sluice middleware inside this one lists this one's policies too: its headers win.
    if (c.get('rateLimit') === mine && mode !== false) {
      const headers = headersOf(mine, mode);
      try {
        setAll(c.res.headers, headers);
      } catch {
        // A Response from fetch() has immutable headers.
        c.res = new Response(c.res.body, c.res);
        setAll(c.res.headers, headers);
      }
    }
  }

  // A limit that is a function of the request: its policies made so far.
  const policies = () => [
    ...limits.flatMap((l) => (l.fixed === undefined ? [] : [l.fixed.policy])),
    ...[...made.values()].map((p) => p.policy),
  ];
  const controls = createEdgeControls(store, policies, blocks, now);
  return Object.assign(sluiceRateLimit, controls);
}

export type { HonoRateLimitOptions, RateLimitControls, RateLimitInfo, RateLimitOptions, RejectionInfo };
