/**
 * `@RateLimit()` and `@SkipRateLimit()`. They record their options in WeakMaps keyed by the class or
 * the handler function — the two things Nest's ExecutionContext hands the guard — so they need neither
 * `reflect-metadata` nor `emitDecoratorMetadata` (which tsx and esbuild do not emit).
 */
import { SluiceError } from '../../core/errors.js';
import type { HttpLimit, HttpPolicy, RequestFn } from '../../http/index.js';
import type { NestTarget } from './target.js';

/** The limits of one handler or controller, replacing the module's limits there. */
export interface RouteLimitOptions extends Partial<HttpPolicy> {
  /** Several limits, all or nothing (instead of the inline `limit`/`period`). */
  limits?: readonly HttpLimit<NestTarget>[];
  /** The key to count under. @default the module's `key` (the client IP) */
  key?: RequestFn<NestTarget, string | number | null | undefined>;
  /** Units a call takes. @default the module's `cost` (1) */
  cost?: number | RequestFn<NestTarget, number>;
}

/** What `@SkipRateLimit()` recorded: every limit, or the named ones. */
export type SkipSpec = true | ReadonlySet<string>;

/** A decorator usable on a class or a method (legacy TypeScript decorators, as Nest uses). */
export type ClassOrMethodDecorator = (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => void;

const routeLimits = new WeakMap<object, RouteLimitOptions>();
const skips = new WeakMap<object, SkipSpec>();

/** The decorated thing: the method (as `context.getHandler()` returns it) or the class. */
function subjectOf(target: object, descriptor: PropertyDescriptor | undefined): object {
  const value = descriptor?.value as unknown;
  if (typeof value === 'function') return value;
  if (typeof target === 'function') return target;
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'rate-limit decorators go on a controller, a gateway or a method');
}

/**
 * Gives a handler (or every handler of a class) its own limits instead of the module's, counted per
 * handler. A method's decorator wins over its class's.
 *
 * @example
 * @Post('login')
 * @RateLimit({ limit: 5, period: '1m', blockDuration: '15m' })
 * login() {}
 */
export function RateLimit(options: RouteLimitOptions): ClassOrMethodDecorator {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', '@RateLimit(options): expected an options object');
  }
  const hasInline = options.limit !== undefined || options.period !== undefined;
  if (hasInline === (options.limits !== undefined)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      "@RateLimit(options): give either { limit, period } or { limits: [...] }, e.g. @RateLimit({ limit: 5, period: '1m' })",
    );
  }
  return (target, _key, descriptor) => {
    routeLimits.set(subjectOf(target, descriptor), options);
  };
}

/**
 * Exempts a handler (or a whole class) from rate limiting: from every limit, or only from the named
 * module limits.
 *
 * @example
 * @Get('health')
 * @SkipRateLimit()
 * health() { return 'ok'; }
 */
export function SkipRateLimit(...names: string[]): ClassOrMethodDecorator {
  for (const name of names) {
    if (typeof name !== 'string' || name === '') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', '@SkipRateLimit(...names): names must be non-empty strings');
    }
  }
  const spec: SkipSpec = names.length === 0 ? true : new Set(names);
  return (target, _key, descriptor) => {
    skips.set(subjectOf(target, descriptor), spec);
  };
}

/** The route limits of a handler: its own, else its class's. */
export function routeLimitsOf(cls: object, handler: object): RouteLimitOptions | undefined {
  return routeLimits.get(handler) ?? routeLimits.get(cls);
}

/** What a handler skips: the union of its own and its class's. */
export function skipsOf(cls: object, handler: object): SkipSpec | undefined {
  const a = skips.get(handler);
  const b = skips.get(cls);
  if (a === true || b === true) return true;
  if (a === undefined) return b;
  if (b === undefined) return a;
  return new Set([...a, ...b]);
}
