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
import { blockedDecision, type RateLimitControls } from '../../http/controls.js';
import { createIpKey } from '../../http/ip-key.js';
import type { RateLimitOptions } from '../../http/options.js';
import { appendInfo, previousInfo, type RateLimitInfo } from '../../http/rate-limit-info.js';
import { type RejectionInfo, rejectionInfo } from '../../http/rejection.js';
import type { HttpRequestInfo } from '../../http/request.js';
import { claimCounters } from '../../http/shared-counters.js';
import { combineDecisions } from '../../limiter/combine.js';
import { closedDecision, isStoreFailure, openDecision } from '../../limiter/failure-policy.js';
import { createCompactMemoryStore } from '../../stores/memory/compact-store.js';
import type { Store, StoreItem } from '../../stores/store.js';
import { createEdgeControls } from './edge-controls.js';
import { checkEdgeOptions, type EdgeLimit, type EdgePolicy, edgeLimits } from './edge-limits.js';
import { type Applied, createEdgePlan } from './edge-plan.js';
import { createEdgeRejecter, headersOf, setAll } from './edge-reject.js';
import type { HonoRateLimitOptions } from './options.js';
import { createPeerReader } from './peer.js';

/** A store given by the user may be shared with other middlewares: claim this one's counters on it. */
function claimEdgeCounters(store: Store, limits: readonly EdgeLimit[], shared: boolean): void {
  if (!limits.every((l) => l.fixed !== undefined)) return;
  const claims = limits.map(({ name, fixed }) => {
    const p = (fixed as EdgePolicy).policy;
    return { id: p.id, label: `'${name}' (${p.algorithm} ${p.limit} per ${p.periodMs} ms)` };
  });
  claimCounters(store, claims, shared);
}

/** The store's decisions, or the failure policy's when it fails (a misuse is thrown on). */
async function decide(store: Store, items: StoreItem[], nowMs: number, closed: boolean): Promise<Decision[]> {
  try {
    // One limit through check, as the full middleware's limiter does: a store may treat a blocked key differently.
    const [one] = items;
    if (items.length === 1 && one !== undefined) return [await store.check(one.key, one.policy, one.cost, nowMs, true)];
    return await store.checkMany(items, nowMs, true);
  } catch (error) {
    if (!isStoreFailure(error)) throw error;
    return items.map((i) =>
      closed ? closedDecision(i.policy.limit, i.policy.periodMs) : openDecision(i.policy.limit),
    );
  }
}

/** A limit's in-process block (the `block` control) as its decision, or undefined when the key is not blocked. */
function blockOf(a: Applied, blocks: ReadonlyMap<string, number>, nowMs: number): Decision | undefined {
  const ms = (blocks.get(a.key) ?? 0) - nowMs;
  return ms > 0 ? blockedDecision(a.header.quota, ms) : undefined;
}

/** The request's cost, checked. */
async function costOf(options: HonoRateLimitOptions, c: Context, info: HttpRequestInfo): Promise<number> {
  const cost = typeof options.cost === 'function' ? await options.cost(c, info) : (options.cost ?? 1);
  if (!(Number.isInteger(cost) && cost >= 0 && cost <= 1e9))
    throw new SluiceError('ERR_SLUICE_INVALID_COST', `cost: ${String(cost)} is not a whole number between 0 and 1e9`);
  return cost;
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
  if (options.store !== undefined) claimEdgeCounters(store, limits, options.shared === true);
  const now = options.clock?.now ?? Date.now;
  const mode = options.headers ?? 'both';
  const shadow = options.shadow === true;
  const limitedStatus = options.statusCode ?? 429;
  const peerOf = options.peerAddress ?? createPeerReader(options);
  const ipKeyOf = createIpKey(options.ipv6Subnet);
  const plan = createEdgePlan(limits, options.key, options.name);
  const reject = createEdgeRejecter(options, mode);
  const blocks = new Map<string, number>();

  function infoOf(c: Context): HttpRequestInfo {
    const peer = peerOf(c);
    const ip = peer === undefined || peer === '' ? '' : normalize(peer);
    const ipKey = ip === '' ? 'unknown' : ipKeyOf(ip);
    return { ip, ipKey, method: c.req.method, path: c.req.path, header: (name) => c.req.header(name) };
  }

  /** A rejection by the store (or its failure policy), reported to `onLimited`; undefined when shadow lets it pass. */
  function refused(c: Context, ip: string, binding: Decision, own: RateLimitInfo['limits']) {
    const name = own.find((o) => o.decision === binding)?.name;
    const kind = binding.reason === 'store-unavailable' ? 'unavailable' : 'limited';
    if (kind === 'limited') options.onLimited?.({ req: c, ip, decision: binding, limitName: name as string, shadow });
    return shadow ? undefined : reject(c, rejectionInfo(kind, binding, name, limitedStatus), [...own]);
  }

  async function sluiceRateLimit(c: Context, next: Next) {
    const info = infoOf(c);
    if (options.skip !== undefined && (await options.skip(c, info))) return next();
    const list = await plan.applied(c, info);
    if (!Array.isArray(list)) return reject(c, list as RejectionInfo, []);
    if (list.length === 0) return next();
    const nowMs = now();
    for (const a of list) {
      const decision = blockOf(a, blocks, nowMs);
      if (decision !== undefined)
        return reject(c, rejectionInfo('limited', decision, a.name, limitedStatus), [{ ...a, decision }]);
    }
    const cost = await costOf(options, c, info);
    const items = list.map((a) => ({ key: a.key, policy: a.policy, cost }));
    const decisions = await decide(store, items, nowMs, options.fail === 'closed');
    const own = list.map((a, i) => ({
      name: a.name,
      header: a.header,
      decision: decisions[i] as Decision,
      key: a.key,
    }));
    const binding = combineDecisions(decisions);
    if (!binding.allowed) return (await refused(c, info.ip, binding, own)) ?? next();
    if (shadow) return next();
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

  return Object.assign(sluiceRateLimit, createEdgeControls(store, plan.policies, blocks, now));
}

export type { HonoRateLimitOptions, RateLimitControls, RateLimitInfo, RateLimitOptions, RejectionInfo };
