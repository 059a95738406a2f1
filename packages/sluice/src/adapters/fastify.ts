/**
 * `sluice/fastify` — rate limiting for Fastify 5, as a plugin with per-route settings.
 * @packageDocumentation
 */
import type {
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteOptions,
} from 'fastify';
import { SluiceError } from '../core/errors.js';
import { afterNodeResponse } from '../http/count-by-response.js';
import {
  createMiddlewareLimiter,
  type HttpLimiter,
  type HttpOutcome,
  nodeHeader,
  PASS,
  type RateLimitControls,
  type RateLimitInfo,
  type RateLimitOptions,
  type RejectionInfo,
  type RequestAccess,
  shareAdaptive,
} from '../http/index.js';
import { meterNodeResponse } from '../http/meter-response.js';
import { warnOnce } from '../http/warn.js';

/** Options of the Fastify plugin: the common options plus a native rejection handler. */
export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest> {
  /** Answers a rejection yourself (the rate-limit headers and `Retry-After` are already set). */
  handler?: (request: FastifyRequest, reply: FastifyReply, rejection: RejectionInfo) => void;
  /**
   * `false`: limit only the routes that ask for it with `config.rateLimit` (an object: `{}` for the
   * plugin's limit, or a limit of the route's own, which then stands alone), as @fastify/rate-limit's
   * `global: false`; every other route, 404s included, is not limited.
   * @default true
   */
  global?: boolean;
}

/**
 * A route's own settings, under `config.rateLimit`: `false` turns limiting off for the route; an
 * object overrides the plugin's options. With a limit of its own (`limit`/`limits`) the route counts
 * it separately (named `"<METHOD> <url>"` unless `name` is given) **in addition to** the plugin's
 * limit, unless `replaceGlobal: true`; without one it shares the plugin's counters, e.g. `{ cost: 5 }`.
 */
export type FastifyRouteRateLimit = (Partial<FastifyRateLimitOptions> & { replaceGlobal?: boolean }) | false;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** sluice's per-route settings (see `FastifyRouteRateLimit`). */
    rateLimit?: FastifyRouteRateLimit;
  }
  interface FastifyRequest {
    /** What sluice decided (every limit applied so far, the one closest to exhaustion first). */
    rateLimit?: RateLimitInfo | null;
  }
}

/**
 * The `trustProxy` a Fastify instance was created with. Fastify keeps its options under a private
 * symbol and leaves `trustProxy` out of `initialConfig`, so it is found by the symbol's description;
 * read once, when the plugin loads.
 */
function trustSettingOf(fastify: object): unknown {
  const key = Object.getOwnPropertySymbols(fastify).find((s) => s.description === 'fastify.options');
  return key === undefined
    ? undefined
    : (fastify as Record<symbol, { trustProxy?: unknown } | undefined>)[key]?.trustProxy;
}

const access: RequestAccess<FastifyRequest> = {
  name: 'Fastify',
  peer: (request) => request.raw.socket.remoteAddress,
  header: (request, name) => nodeHeader(request.raw.headers, name),
  method: (request) => request.raw.method ?? 'GET',
  url: (request) => request.raw.url ?? '/',
  headers: (request) => request.raw.headers,
  rateLimitOf: (request) => request.rateLimit,
  // Parsed by the time of the preHandler hook, where the tokenBudget option reserves.
  body: (request) => request.body,
  // Fastify's own `trustProxy`, unless sluice's is given: `request.ip` is the client as Fastify
  // resolved it (proxy-addr, from the right through trusted hops).
  framework: {
    setting: 'Fastify({ trustProxy })',
    example: "Fastify({ trustProxy: '127.0.0.1,10.0.0.0/8' })",
    // With `trustProxy` set, Fastify builds its requests with an `ips` accessor (and only then).
    clientIp: (request) => ('ips' in request ? request.ip : undefined),
    // Warned about when the plugin loads, where the setting can be read (see trustSettingOf).
    permissive: () => false,
  },
};

/**
 * The symbol under which Fastify keeps a reply's headers (undefined: not looked up yet; null: absent).
 * `reply.header(name, value)` lower-cases the name and stores it there, with a special case only for
 * `set-cookie`; sluice's header names are lower-case already and never `set-cookie`, so storing them
 * directly is the same, at a fraction of the cost (five headers per request by default).
 */
let replyHeadersKey: symbol | null | undefined;

/** The reply's own header object, or undefined when this Fastify keeps it elsewhere (use reply.header). */
function headerBagOf(reply: FastifyReply): Record<string, unknown> | undefined {
  if (replyHeadersKey === undefined) {
    replyHeadersKey =
      Object.getOwnPropertySymbols(reply).find((s) => s.description === 'fastify.reply.headers') ?? null;
  }
  if (replyHeadersKey === null) return undefined;
  const bag = (reply as unknown as Record<symbol, unknown>)[replyHeadersKey];
  return bag !== null && typeof bag === 'object' ? (bag as Record<string, unknown>) : undefined;
}

/**
 * Copies a header list into a reply's header object. Unrolled on purpose: each line is a store site
 * of its own that always sees the same name (the lists of one middleware keep their layout), which V8
 * makes a plain property store; one store in a loop sees every name and goes through V8's generic
 * path, about 200 instructions a header (a thousand a request with the default five).
 */
function copyHeaders(bag: Record<string, unknown>, h: readonly string[]): void {
  const n = h.length;
  if (n > 0) bag[h[0] as string] = h[1];
  if (n > 2) bag[h[2] as string] = h[3];
  if (n > 4) bag[h[4] as string] = h[5];
  if (n > 6) bag[h[6] as string] = h[7];
  if (n > 8) bag[h[8] as string] = h[9];
  if (n > 10) bag[h[10] as string] = h[11];
  for (let i = 12; i < n; i += 2) bag[h[i] as string] = h[i + 1];
}

const EXTRA_KEYS: ReadonlySet<string> = new Set(['handler', 'global']);
const ROUTE_KEYS: ReadonlySet<string> = new Set(['handler', 'replaceGlobal', 'global']);
const POLICY_KEYS = ['algorithm', 'limit', 'period', 'burst', 'blockDuration', 'limits'] as const;
/** Where a route's limiters are kept, inside the route's config (spread into Fastify's route context). */
const ROUTE_LIMITERS = Symbol('sluice.routeLimiters');

/** The limiters a route's requests go through, in order (none: limiting is off for the route). */
type Chain = readonly HttpLimiter<FastifyRequest>[];

/**
 * Creates a Fastify plugin: `app.register(rateLimit(options))`. It applies to every route of the
 * instance, 404s included, and reads per-route settings from `config.rateLimit` — also of routes
 * declared before the plugin was loaded (e.g. when `register` was not awaited).
 *
 * @example
 * import Fastify from 'fastify';
 * import { rateLimit } from 'sluice/fastify';
 * const app = Fastify();
 * await app.register(rateLimit({ limit: 100, period: '1m' }));
 * app.post('/login', { config: { rateLimit: { limit: 5, period: '1m' } } }, async () => 'ok'); // 5/min AND 100/min
 */
export function rateLimit(options: FastifyRateLimitOptions): FastifyPluginCallback & RateLimitControls {
  if (options.global !== undefined && typeof options.global !== 'boolean') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'global: expected true or false', { option: 'global' });
  }
  const everyRoute = options.global !== false;
  // One adaptive limit for the plugin, whichever of its limiters a request goes through.
  // The token budget is the plugin's alone (routes' limiters leave it out), reserved once the body is parsed.
  const { tokenBudget, ...withoutBudget } = options;
  const pluginOptions =
    options.adaptive === undefined ? withoutBudget : { ...withoutBudget, adaptive: shareAdaptive(options.adaptive) };
  const global = createMiddlewareLimiter(
    tokenBudget === undefined ? pluginOptions : { ...pluginOptions, tokenBudget },
    access,
    EXTRA_KEYS,
    true,
    false,
  );
  const budget = global.tokenBudget;
  /** Every limiter of the plugin (the global one and the routes'), for resetKey, penalty and block. */
  const all: HttpLimiter<FastifyRequest>[] = [global];
  /** What a route without settings of its own goes through: the plugin's limit, or nothing (global: false). */
  const globalChain: Chain = everyRoute ? [global] : [];
  /** True once some route has settings of its own: only then is the route's config read per request. */
  let routeSettings = false;
  /** Chains of routes declared before the plugin was loaded, built on their first request. */
  const late = new WeakMap<object, Chain>();

  function chainFor(method: unknown, url: unknown, own: FastifyRouteRateLimit): Chain {
    if (own === false) return [];
    if (own === null || typeof own !== 'object') {
      throw new TypeError(`sluice: config.rateLimit of ${String(method)} ${String(url)} must be an object or false`);
    }
    const { replaceGlobal, tokenBudget: _plugins, ...settings } = own;
    const merged: Record<string, unknown> = { ...pluginOptions, store: global.store };
    if (!POLICY_KEYS.some((k) => settings[k] !== undefined)) {
      // The plugin's limit with other options (a cost, a key): the same counters, on purpose.
      Object.assign(merged, settings);
      const same = createMiddlewareLimiter(merged as FastifyRateLimitOptions, access, EXTRA_KEYS, false);
      all.push(same);
      return [same];
    }
    for (const k of POLICY_KEYS) delete merged[k];
    merged.name = `${Array.isArray(method) ? method.join(',') : String(method)} ${String(url)}`;
    Object.assign(merged, settings);
    const alone = replaceGlobal === true || !everyRoute;
    // Followed by the plugin's limiter, which takes the adaptive place: the route's must not take another.
    if (!alone) delete merged.adaptive;
    const route = createMiddlewareLimiter(merged as FastifyRateLimitOptions, access, ROUTE_KEYS);
    all.push(route);
    // The route's own limit first; a request either rejects takes nothing from the other (what the
    // route's took is given back when the plugin's rejects). Both are listed in the headers. With
    // global: false there is no plugin limit to add it to.
    return alone ? [route] : [route, global];
  }

  function chainOf(request: FastifyRequest): Chain {
    const config = request.routeOptions.config as
      | ({ [ROUTE_LIMITERS]?: Chain; rateLimit?: FastifyRouteRateLimit; method?: unknown; url?: unknown } & object)
      | undefined;
    if (config === undefined) return globalChain;
    const attached = config[ROUTE_LIMITERS] ?? late.get(config);
    if (attached !== undefined) return attached;
    if (config.rateLimit === undefined) return globalChain;
    const chain = chainFor(config.method, config.url, config.rateLimit);
    late.set(config, chain);
    return chain;
  }

  function run(chain: Chain, i: number, request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    const limiter = chain[i];
    if (limiter === undefined) return done();
    let outcome: ReturnType<typeof limiter.decide>;
    try {
      outcome = limiter.decide(request);
    } catch (error) {
      return done(error as Error);
    }
    if (outcome instanceof Promise) {
      outcome.then((o) => apply(o, chain, i, request, reply, done), done);
    } else {
      apply(outcome, chain, i, request, reply, done);
    }
  }

  function apply(
    outcome: HttpOutcome,
    chain: Chain,
    i: number,
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ) {
    if (outcome.info !== undefined) request.rateLimit = outcome.info;
    if (outcome.afterResponse !== undefined) afterNodeResponse(reply.raw, outcome.afterResponse);
    const headers = outcome.headers;
    const bag = headers.length > 0 ? headerBagOf(reply) : undefined;
    if (bag !== undefined) {
      copyHeaders(bag, headers);
    } else {
      for (let h = 0; h < headers.length; h += 2) reply.header(headers[h] as string, headers[h + 1] as string);
    }
    if (outcome.pass) return i + 1 < chain.length ? run(chain, i + 1, request, reply, done) : done();
    if (options.handler !== undefined && outcome.rejection !== undefined) {
      return options.handler(request, reply, outcome.rejection);
    }
    // Answering from the hook ends the request here; `done` must not be called as well. A Buffer,
    // because Fastify appends `; charset=utf-8` to the type of a string body, and every adapter
    // sends the same `application/json`.
    reply.code(outcome.status).header('content-type', outcome.contentType).send(Buffer.from(outcome.body));
  }

  /** The tokenBudget's hook: reserves from the parsed body, meters the reply, or answers 429. */
  function budgetHook(stage: NonNullable<typeof budget>) {
    return async function sluiceTokenBudget(request: FastifyRequest, reply: FastifyReply) {
      if ((request.routeOptions.config as { rateLimit?: unknown } | undefined)?.rateLimit === false) return;
      // The IETF fields the rate limits set are listed with the budget's.
      const present: string[] = [];
      for (const name of ['ratelimit-policy', 'ratelimit']) {
        const value = reply.getHeader(name);
        if (typeof value === 'string') present.push(name, value);
      }
      const outcome = await stage.admit(request, { ...PASS, headers: present, info: request.rateLimit ?? undefined });
      const h = outcome.headers;
      for (let i = 0; i < h.length; i += 2) reply.header(h[i] as string, h[i + 1] as string);
      if (outcome.pass) {
        if (outcome.meter !== undefined) meterNodeResponse(reply.raw, outcome.meter);
        return;
      }
      if (options.handler !== undefined && outcome.rejection !== undefined) {
        options.handler(request, reply, outcome.rejection);
        return reply;
      }
      return reply.code(outcome.status).header('content-type', outcome.contentType).send(Buffer.from(outcome.body));
    };
  }

  const plugin: FastifyPluginCallback = (fastify, _opts, pluginDone) => {
    if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', null);
    if (options.trustProxy === undefined && trustSettingOf(fastify) === true) {
      warnOnce(
        'SLUICE_PERMISSIVE_TRUST_PROXY',
        "sluice: Fastify's trustProxy is true, which trusts every peer, so any client can pick its own rate-limit " +
          "key by sending X-Forwarded-For. Trust only your proxies (e.g. Fastify({ trustProxy: '127.0.0.1,10.0.0.0/8' })), " +
          "or give sluice its own: rateLimit({ trustProxy: ['10.0.0.0/8'] }).",
      );
    }
    // Routes declared before the plugin loaded (`register` not awaited, or routes first) never reach
    // the onRoute hook: their settings are read from the request instead, so they still apply.
    if (typeof fastify.printRoutes !== 'function' || fastify.printRoutes() !== '(empty tree)') routeSettings = true;
    fastify.addHook('onRoute', (route: RouteOptions) => {
      const own = route.config?.rateLimit;
      if (own === undefined) return;
      const chain = chainFor(route.method, route.url, own);
      route.config = { ...route.config, [ROUTE_LIMITERS]: chain } as NonNullable<typeof route.config>;
      routeSettings = true;
    });
    if (budget !== undefined) fastify.addHook('preHandler', budgetHook(budget));
    fastify.addHook('onRequest', function sluiceRateLimit(request, reply, done) {
      // global: false and no route has settings: nothing to limit (not even 404s).
      if (!everyRoute && !routeSettings) return done();
      let chain = globalChain;
      if (routeSettings) {
        try {
          chain = chainOf(request);
        } catch (error) {
          return done(error as Error);
        }
      }
      run(chain, 0, request, reply, done);
    });
    pluginDone();
  };
  // What fastify-plugin does: let the hooks reach the routes of the instance that registers the plugin.
  const marked = plugin as FastifyPluginCallback & Record<symbol, unknown>;
  marked[Symbol.for('skip-override')] = true;
  marked[Symbol.for('fastify.display-name')] = 'sluice';
  const controls: RateLimitControls = {
    resetKey: async (key) => void (await Promise.all(all.map((l) => l.resetKey(key)))),
    penalty: async (key, units) => void (await Promise.all(all.map((l) => l.penalty(key, units)))),
    block: async (key, duration) => void (await Promise.all(all.map((l) => l.block(key, duration)))),
  };
  return Object.assign(plugin, controls);
}

export type { RateLimitControls, RateLimitInfo, RateLimitOptions, RejectionInfo };
