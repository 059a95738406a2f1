/**
 * `sluice/fastify` — rate limiting for Fastify 5, as a plugin with per-route settings.
 * @packageDocumentation
 */
import type { FastifyPluginCallback, FastifyRequest, RouteOptions } from 'fastify';
import { SluiceError } from '../core/errors.js';
import {
  createMiddlewareLimiter,
  type HttpLimiter,
  type RateLimitControls,
  type RateLimitInfo,
  type RateLimitOptions,
  type RejectionInfo,
  shareAdaptive,
} from '../http/index.js';
import { budgetHook } from './fastify/budget-hook.js';
import type { FastifyRateLimitOptions } from './fastify/options.js';
import { fastifyAccess, warnPermissiveTrust } from './fastify/request-access.js';
import { createRouteChains, PLUGIN_KEYS, ROUTE_LIMITERS } from './fastify/route-chains.js';
import { createChainRunner } from './fastify/run-chain.js';

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
    fastifyAccess,
    PLUGIN_KEYS,
    true,
    false,
  );
  /** Every limiter of the plugin (the global one and the routes'), for resetKey, penalty and block. */
  const all: HttpLimiter<FastifyRequest>[] = [global];
  const routes = createRouteChains(pluginOptions, global, everyRoute, all);
  const run = createChainRunner(options.handler);
  /** True once some route has settings of its own: only then is the route's config read per request. */
  let routeSettings = false;

  const plugin: FastifyPluginCallback = (fastify, _opts, pluginDone) => {
    if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', null);
    warnPermissiveTrust(fastify, options.trustProxy);
    // Routes declared before the plugin loaded (`register` not awaited, or routes first) never reach
    // the onRoute hook: their settings are read from the request instead, so they still apply.
    if (typeof fastify.printRoutes !== 'function' || fastify.printRoutes() !== '(empty tree)') routeSettings = true;
    fastify.addHook('onRoute', (route: RouteOptions) => {
      const own = route.config?.rateLimit;
      if (own === undefined) return;
      const chain = routes.chainFor(route.method, route.url, own);
      route.config = { ...route.config, [ROUTE_LIMITERS]: chain } as NonNullable<typeof route.config>;
      routeSettings = true;
    });
    if (global.tokenBudget !== undefined)
      fastify.addHook('preHandler', budgetHook(global.tokenBudget, options.handler));
    // The hot path: every request of the instance, 404s included.
    fastify.addHook('onRequest', function sluiceRateLimit(request, reply, done) {
      // global: false and no route has settings: nothing to limit (not even 404s).
      if (!everyRoute && !routeSettings) return done();
      let chain = routes.globalChain;
      if (routeSettings) {
        try {
          chain = routes.chainOf(request);
        } catch (error) {
          return done(error as Error);
        }
      }
      run(chain, request, reply, done);
    });
    pluginDone();
  };
  return Object.assign(markedSkipOverride(plugin), controlsOf(all));
}

/** What fastify-plugin does: let the hooks reach the routes of the instance that registers the plugin. */
function markedSkipOverride(plugin: FastifyPluginCallback): FastifyPluginCallback {
  const marked = plugin as FastifyPluginCallback & Record<symbol, unknown>;
  marked[Symbol.for('skip-override')] = true;
  marked[Symbol.for('fastify.display-name')] = 'sluice';
  return plugin;
}

/** resetKey, penalty and block act on every limiter of the plugin (the global one and the routes'). */
function controlsOf(all: readonly HttpLimiter<FastifyRequest>[]): RateLimitControls {
  return {
    resetKey: async (key) => void (await Promise.all(all.map((l) => l.resetKey(key)))),
    penalty: async (key, units) => void (await Promise.all(all.map((l) => l.penalty(key, units)))),
    block: async (key, duration) => void (await Promise.all(all.map((l) => l.block(key, duration)))),
  };
}

export type { FastifyRateLimitOptions, FastifyRouteRateLimit } from './fastify/options.js';
export type { RateLimitControls, RateLimitInfo, RateLimitOptions, RejectionInfo };
