/**
 * Option names of the libraries sluice replaces, and what to write instead. An unknown option is an
 * error (`ERR_SLUICE_UNKNOWN_OPTION`) — silently ignoring `windowMs` would leave the default window in
 * force — and when the name is one of theirs, the message says the sluice spelling.
 */

/** What a hint is written from: the options given, and the rate limiter this framework's users come from. */
interface Given {
  /** The period their window option stands for, as sluice writes it (`'15m'` when none was given). */
  readonly period: string;
  /** Their `duration` (seconds), or 60. */
  readonly seconds: number;
  /** Their `max`, or 100. */
  readonly max: unknown;
  /** `express-rate-limit`, `@fastify/rate-limit`, … */
  readonly library: string;
}

/** Their option name → the fix, in a sentence (a function when it depends on what was given). */
const HINTS: Readonly<Record<string, string | ((given: Given) => string)>> = {
  // express-rate-limit
  windowMs: (g) =>
    `express-rate-limit's windowMs is sluice's period (milliseconds or a string): { period: '${g.period}' }`,
  max: (g) => `${g.library}'s max is sluice's limit: { limit: ${String(g.max)}, period: '${g.period}' }`,
  keyGenerator: "keyGenerator is sluice's key: { key: (req) => req.user?.id }",
  standardHeaders:
    "standardHeaders is sluice's headers: 'draft' (RateLimit, RateLimit-Policy), 'x', 'both' (the default) or false",
  legacyHeaders: "legacyHeaders is sluice's headers: 'x' (X-RateLimit-*), 'draft', 'both' (the default) or false",
  requestPropertyName:
    "sluice always puts the decision on the request: req.rateLimit (Koa ctx.state.rateLimit, Hono c.get('rateLimit'))",
  passOnStoreError: "passOnStoreError: true is sluice's fail: 'open' (the default; 'closed' answers 503)",
  validate: 'sluice validates every option when rateLimit() is called; there is nothing to turn off',
  identifier: "identifier is sluice's name: the policy name in the RateLimit headers",
  onLimitReached: "onLimitReached is sluice's onLimited: (event) => log(event.ip, event.limitName)",
  // @fastify/rate-limit
  timeWindow: (g) => `@fastify/rate-limit's timeWindow is sluice's period: { period: '${g.period}' }`,
  allowList: "allowList is sluice's allow: ['127.0.0.1', '10.0.0.0/8', 'api-key-1']",
  skipOnError: "skipOnError: true is sluice's fail: 'open' (the default)",
  nameSpace: "nameSpace is sluice's name (counters of differently named middlewares never mix)",
  errorResponseBuilder: "errorResponseBuilder is sluice's body: (rejection, req) => ({ ... }), or handler",
  onExceeded: "onExceeded is sluice's onLimited: (event) => log(event.ip, event.limitName)",
  enableDraftSpec: "enableDraftSpec is sluice's headers: 'draft' (RateLimit, RateLimit-Policy)",
  addHeaders: "addHeaders is sluice's headers: 'x', 'draft', 'both' (the default) or false",
  addHeadersOnExceeding: "addHeadersOnExceeding is sluice's headers: 'x', 'draft', 'both' (the default) or false",
  ban: "ban has no sluice equivalent; blockDuration: '15m' keeps rejecting a key once it went over",
  global:
    "sluice's global is the same option, for the Fastify plugin only: global: false limits only the routes with config: { rateLimit: { ... } }",
  redis: "give sluice a store instead: store: createRedisStore({ client: redis }) from 'sluice/redis'",
  // rate-limiter-flexible
  points: (g) => `rate-limiter-flexible's points is sluice's limit: { limit: 10, period: '${g.period}' }`,
  duration: (g) =>
    `rate-limiter-flexible's duration (in seconds) is sluice's period (milliseconds or a string): duration: ${g.seconds} is period: '${g.seconds}s'`,
  keyPrefix: "keyPrefix is sluice's name (counters of differently named middlewares never mix)",
  storeClient: "give sluice a store instead: store: createRedisStore({ client }) from 'sluice/redis'",
  insuranceLimiter: "insuranceLimiter is sluice's fail: 'insurance' (an in-memory limiter with the same policy)",
  execEvenly: "execEvenly is sluice's mode: 'shape' (requests are held for their turn, leaky-bucket)",
};

/** The rate limiter users of each framework usually come from (by the adapter's name). */
const LIBRARY_OF: Readonly<Record<string, string>> = {
  Express: 'express-rate-limit',
  Fastify: '@fastify/rate-limit',
  Koa: 'koa-ratelimit',
  Hono: 'hono-rate-limiter',
  NestJS: '@nestjs/throttler',
};

/** A period in milliseconds as sluice writes it: the largest whole unit, or the number itself. */
function periodOf(ms: number): string {
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** The period their window option stands for: windowMs and timeWindow in ms (or a string), duration in seconds. */
function givenPeriod(options: Readonly<Record<string, unknown>>): string {
  const { windowMs, timeWindow, duration } = options;
  for (const v of [windowMs, timeWindow]) {
    if (typeof v === 'number' && Number.isFinite(v) && v > 0) return periodOf(v);
    if (typeof v === 'string' && v.trim() !== '') return v;
  }
  if (typeof duration === 'number' && Number.isFinite(duration) && duration > 0) return periodOf(duration * 1000);
  return '15m';
}

/**
 * The fix for an option name of another library, or undefined; written from the options given (their
 * window becomes the suggested period) and the framework in use (whose rate limiter `max` came from).
 */
export function migrationHint(
  option: string,
  options: Readonly<Record<string, unknown>> = {},
  framework?: string,
): string | undefined {
  if (!Object.hasOwn(HINTS, option)) return undefined;
  const hint = HINTS[option];
  if (typeof hint !== 'function') return hint;
  const library = (framework === undefined ? undefined : LIBRARY_OF[framework]) ?? 'express-rate-limit';
  const max = typeof options.max === 'number' ? options.max : 100;
  const seconds = typeof options.duration === 'number' ? options.duration : 60;
  return hint({ period: givenPeriod(options), max, seconds, library });
}
