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
import {
  createHttpLimiter,
  type HttpLimiter,
  type HttpOutcome,
  nodeHeader,
  type RateLimitOptions,
  type RejectionInfo,
  type RequestAccess,
} from '../http/index.js';

/** Options of the Fastify plugin: the common options (SPEC §4) plus a native rejection handler. */
export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest> {
  /** Answers a rejection yourself (the rate-limit headers and `Retry-After` are already set). */
  handler?: (request: FastifyRequest, reply: FastifyReply, rejection: RejectionInfo) => void;
}

/**
 * A route's own settings, under `config.rateLimit`: `false` turns limiting off for the route; an
 * object overrides the plugin's options. With its own limit (`limit`/`limits`) the route counts
 * separately (named `"<METHOD> <url>"` unless `name` is given); without one it shares the plugin's
 * counters, e.g. `{ cost: 5 }` for an expensive route.
 */
export type FastifyRouteRateLimit = Partial<FastifyRateLimitOptions> | false;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** sluice's per-route settings (see `FastifyRouteRateLimit`). */
    rateLimit?: FastifyRouteRateLimit;
  }
}

const access: RequestAccess<FastifyRequest> = {
  peer: (request) => request.raw.socket.remoteAddress,
  header: (request, name) => nodeHeader(request.raw.headers, name),
  method: (request) => request.raw.method ?? 'GET',
  url: (request) => request.raw.url ?? '/',
  headers: (request) => request.raw.headers,
};

const EXTRA_KEYS: ReadonlySet<string> = new Set(['handler']);
const POLICY_KEYS = ['algorithm', 'limit', 'period', 'burst', 'blockDuration', 'limits'] as const;
/** Where a route's own limiter is kept, inside the route's config (spread into Fastify's route context). */
const ROUTE_LIMITER = Symbol('sluice.routeLimiter');
/** Marks a route with `rateLimit: false`. */
const OFF = Symbol('sluice.off');

type RouteLimiter = HttpLimiter<FastifyRequest> | typeof OFF;

/**
 * Creates a Fastify plugin: `app.register(rateLimit(options))`. It applies to every route of the
 * instance, 404s included, and reads per-route settings from `config.rateLimit` of routes declared
 * after it is registered.
 *
 * @example
 * import Fastify from 'fastify';
 * import { rateLimit } from 'sluice/fastify';
 * const app = Fastify();
 * await app.register(rateLimit({ limit: 100, period: '1m' }));
 * app.get('/login', { config: { rateLimit: { limit: 5, period: '1m' } } }, async () => 'ok');
 */
export function rateLimit(options: FastifyRateLimitOptions): FastifyPluginCallback {
  const global = createHttpLimiter(options, access, EXTRA_KEYS);
  let routeSettings = false;

  function forRoute(route: RouteOptions, own: Partial<FastifyRateLimitOptions>): HttpLimiter<FastifyRequest> {
    const ownPolicy = POLICY_KEYS.some((k) => own[k] !== undefined);
    const merged: Record<string, unknown> = { ...options, store: global.store };
    if (ownPolicy) {
      for (const k of POLICY_KEYS) delete merged[k];
      const method = Array.isArray(route.method) ? route.method.join(',') : route.method;
      merged.name = `${method} ${route.url}`;
    }
    Object.assign(merged, own);
    return createHttpLimiter(merged as FastifyRateLimitOptions, access, EXTRA_KEYS);
  }

  function apply(outcome: HttpOutcome, request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    const headers = outcome.headers;
    for (let i = 0; i < headers.length; i += 2) {
      reply.header(headers[i] as string, headers[i + 1] as string);
    }
    if (outcome.pass) return done();
    if (options.handler !== undefined && outcome.rejection !== undefined) {
      return options.handler(request, reply, outcome.rejection);
    }
    // Answering from the hook ends the request here; `done` must not be called as well. A Buffer,
    // because Fastify appends `; charset=utf-8` to the type of a string body, and every adapter
    // sends the same `application/json`.
    reply.code(outcome.status).header('content-type', outcome.contentType).send(Buffer.from(outcome.body));
  }

  const plugin: FastifyPluginCallback = (fastify, _opts, pluginDone) => {
    fastify.addHook('onRoute', (route) => {
      const own = route.config?.rateLimit;
      if (own === undefined) return;
      const limiter: RouteLimiter = own === false ? OFF : forRoute(route, own);
      route.config = { ...route.config, [ROUTE_LIMITER]: limiter } as NonNullable<typeof route.config>;
      routeSettings = true;
    });
    fastify.addHook('onRequest', function sluiceRateLimit(request, reply, done) {
      let limiter = global;
      // Reading the route's config allocates, so only when some route has settings of its own.
      if (routeSettings) {
        const own = (request.routeOptions.config as { [ROUTE_LIMITER]?: RouteLimiter })[ROUTE_LIMITER];
        if (own === OFF) return done();
        if (own !== undefined) limiter = own;
      }
      let outcome: ReturnType<typeof limiter.decide>;
      try {
        outcome = limiter.decide(request);
      } catch (error) {
        return done(error as Error);
      }
      if (outcome instanceof Promise) outcome.then((o) => apply(o, request, reply, done), done);
      else apply(outcome, request, reply, done);
    });
    pluginDone();
  };
  // What fastify-plugin does: let the hooks reach the routes of the instance that registers the plugin.
  const marked = plugin as FastifyPluginCallback & Record<symbol, unknown>;
  marked[Symbol.for('skip-override')] = true;
  marked[Symbol.for('fastify.display-name')] = 'sluice';
  return plugin;
}

export type { RateLimitOptions, RejectionInfo };
