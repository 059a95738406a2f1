/**
 * Which of the plugin's limiters a Fastify route's requests go through: the plugin's limit, a limit of the route's
 * own (before the plugin's, or alone), the plugin's limit with other options, or none — built once per route.
 */
import type { FastifyRequest } from 'fastify';
import { createMiddlewareLimiter, type HttpLimiter } from '../../http/index.js';
import type { FastifyRateLimitOptions, FastifyRouteRateLimit } from './options.js';
import { fastifyAccess } from './request-access.js';

/** The limiters a route's requests go through, in order (none: limiting is off for the route). */
export type Chain = readonly HttpLimiter<FastifyRequest>[];

const ROUTE_KEYS: ReadonlySet<string> = new Set(['handler', 'replaceGlobal', 'global']);
/** Option names the plugin accepts besides the common ones. */
export const PLUGIN_KEYS: ReadonlySet<string> = new Set(['handler', 'global']);
const POLICY_KEYS = ['algorithm', 'limit', 'period', 'burst', 'blockDuration', 'limits'] as const;
/** Where a route's limiters are kept, inside the route's config (spread into Fastify's route context). */
export const ROUTE_LIMITERS = Symbol('sluice.routeLimiters');

/** The route config sluice reads: its settings, and the chain attached when the route was declared. */
type RouteConfig = { [ROUTE_LIMITERS]?: Chain; rateLimit?: FastifyRouteRateLimit; method?: unknown; url?: unknown };

/** The chains of a plugin's routes. */
export interface RouteChains {
  /** The chain of a route with settings of its own; every limiter made is added to `all`. */
  chainFor(method: unknown, url: unknown, own: FastifyRouteRateLimit): Chain;
  /** The chain of a request's route: attached when declared, or built on its first request. */
  chainOf(request: FastifyRequest): Chain;
  /** What a route without settings of its own goes through. */
  readonly globalChain: Chain;
}

/**
 * Creates the route chains of a plugin whose own limiter is `global`, made from `pluginOptions`;
 * `everyRoute` is false for `global: false`. Every limiter made is pushed onto `all`.
 */
export function createRouteChains(
  pluginOptions: FastifyRateLimitOptions,
  global: HttpLimiter<FastifyRequest>,
  everyRoute: boolean,
  all: HttpLimiter<FastifyRequest>[],
): RouteChains {
  const globalChain: Chain = everyRoute ? [global] : [];
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
      const same = createMiddlewareLimiter(merged as FastifyRateLimitOptions, fastifyAccess, PLUGIN_KEYS, false);
      all.push(same);
      return [same];
    }
    for (const k of POLICY_KEYS) delete merged[k];
    merged.name = `${Array.isArray(method) ? method.join(',') : String(method)} ${String(url)}`;
    Object.assign(merged, settings);
    const alone = replaceGlobal === true || !everyRoute;
    // Followed by the plugin's limiter, which takes the adaptive place: the route's must not take another.
    if (!alone) delete merged.adaptive;
    const route = createMiddlewareLimiter(merged as FastifyRateLimitOptions, fastifyAccess, ROUTE_KEYS);
    all.push(route);
    // The route's own limit first; a request either rejects takes nothing from the other (what the
    // route's took is given back when the plugin's rejects). Both are listed in the headers. With
    // global: false there is no plugin limit to add it to.
    return alone ? [route] : [route, global];
  }

  function chainOf(request: FastifyRequest): Chain {
    const config = request.routeOptions.config as (RouteConfig & object) | undefined;
    if (config === undefined) return globalChain;
    const attached = config[ROUTE_LIMITERS] ?? late.get(config);
    if (attached !== undefined) return attached;
    if (config.rateLimit === undefined) return globalChain;
    const chain = chainFor(config.method, config.url, config.rateLimit);
    late.set(config, chain);
    return chain;
  }

  return { chainFor, chainOf, globalChain };
}
