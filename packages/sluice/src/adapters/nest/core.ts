/**
 * The guard's state, one per application: the module's options validated once, the store every limit
 * shares, and one framework-neutral limiter per handler (built on the handler's first call).
 */
import { SluiceError } from '../../core/errors.js';
import { createMiddlewareLimiter, type HttpLimiter, type RateLimitOptions, shareAdaptive } from '../../http/index.js';
import { createMemoryStore } from '../../stores/memory/memory-store.js';
import type { Store } from '../../stores/store.js';
import { routeLimitsOf, skipsOf } from './decorators.js';
import { type NestTarget, nestAccess } from './target.js';

/** Options of `RateLimitModule.forRoot()`: the options of every sluice adapter (docs/middleware.md). */
export type NestRateLimitOptions = RateLimitOptions<NestTarget>;

/** The per-application state behind the guard. */
export interface RateLimitCore {
  readonly store: Store;
  /** The limiter of a handler, or undefined when it skips every limit. */
  limiterFor(cls: object, handler: object): HttpLimiter<NestTarget> | undefined;
  /** Closes the store when the module made it (Nest calls this on `app.close()`). */
  onApplicationShutdown(): Promise<void>;
}

const ROUTE_KEYS = ['algorithm', 'limit', 'period', 'burst', 'blockDuration', 'limits', 'key', 'cost'] as const;

/** Validates the module options once and prepares the shared store. */
export function createRateLimitCore(options: NestRateLimitOptions): RateLimitCore {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'RateLimitModule.forRoot(options): expected an options object');
  }
  const ownStore = options.store === undefined && options.rules === undefined ? createMemoryStore() : undefined;
  const stored: NestRateLimitOptions = ownStore === undefined ? options : { ...options, store: ownStore };
  // One adaptive limit for the application, whichever handler's limiter a request goes through.
  const base: NestRateLimitOptions =
    options.adaptive === undefined ? stored : { ...stored, adaptive: shareAdaptive(options.adaptive) };
  // Built now, so a bad option fails at startup rather than on the first request.
  const moduleLimiter = createMiddlewareLimiter(base, nestAccess);
  const store = moduleLimiter.store;
  const limiters = new WeakMap<object, HttpLimiter<NestTarget> | null>();

  function build(cls: object, handler: object): HttpLimiter<NestTarget> | null {
    const skip = skipsOf(cls, handler);
    if (skip === true) return null;
    const route = routeLimitsOf(cls, handler);
    if (route !== undefined) {
      // Its own counters: named after the handler, so two handlers with the same policy stay apart.
      const {
        algorithm: _a,
        limit: _l,
        period: _p,
        burst: _b,
        blockDuration: _d,
        limits: _s,
        rules: _r,
        ...common
      } = base;
      const own: NestRateLimitOptions = { ...common, name: routeName(cls, handler) };
      for (const key of ROUTE_KEYS) {
        if (route[key] !== undefined) (own as Record<string, unknown>)[key] = route[key];
      }
      return createMiddlewareLimiter({ ...own, store }, nestAccess);
    }
    if (skip === undefined) return moduleLimiter;
    if (base.limits === undefined) {
      // An inline module limit is named by the module's `name` (default 'default').
      return skip.has(base.name ?? 'default') ? null : moduleLimiter;
    }
    const kept = base.limits.filter((l) => typeof l === 'function' || l.name === undefined || !skip.has(l.name));
    if (kept.length === base.limits.length) return moduleLimiter;
    if (kept.length === 0) return null;
    // The same names and policies on the same store, on purpose (claim: false): the module's counters.
    return createMiddlewareLimiter({ ...base, limits: kept }, nestAccess, undefined, false);
  }

  return {
    store,
    limiterFor(cls, handler) {
      let limiter = limiters.get(handler);
      if (limiter === undefined) {
        limiter = build(cls, handler);
        limiters.set(handler, limiter);
      }
      return limiter ?? undefined;
    },
    async onApplicationShutdown() {
      await ownStore?.close();
    },
  };
}

function routeName(cls: object, handler: object): string {
  const c = (cls as { name?: string }).name || 'anonymous';
  const h = (handler as { name?: string }).name || 'handler';
  return `${c}.${h}`;
}
