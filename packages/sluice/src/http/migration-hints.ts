/**
 * Option names of the libraries sluice replaces, and what to write instead. An unknown option is an
 * error (`ERR_SLUICE_UNKNOWN_OPTION`) — silently ignoring `windowMs` would leave the default window in
 * force — and when the name is one of theirs, the message says the sluice spelling.
 */

type Options = Readonly<Record<string, unknown>>;

/**
 * Their option name → the fix. A string is sluice's spelling of the option (the hint reads "`<theirs>` is sluice's
 * `<string>`"); a function writes the whole sentence, from the options given and the rate limiter this framework's
 * users come from.
 */
type Hint = string | ((options: Options, library: string) => string);

// Fragments several hints share.
const EXPRESS_RATE_LIMIT = 'express-rate-limit';
const BOTH = "'both' (the default) or false";
const DRAFT = "'draft' (RateLimit, RateLimit-Policy)";
const ANY_HEADERS = `headers: 'x', 'draft', ${BOTH}`;
const NAME = 'name (counters of differently named middlewares never mix)';
const ON_LIMITED = 'onLimited: (event) => log(event.ip, event.limitName)';
const FAIL_OPEN = "fail: 'open' (the default";
const IN_MS = '(milliseconds or a string)';
const FLEXIBLE = "rate-limiter-flexible's";
const redisStore = (client: string) =>
  `give sluice a store instead: store: createRedisStore({ ${client} }) from 'sluice/redis'`;

const HINTS: Readonly<Record<string, Hint>> = {
  // express-rate-limit
  windowMs: (o) => `${EXPRESS_RATE_LIMIT}'s windowMs is sluice's period ${IN_MS}: { period: '${givenPeriod(o)}' }`,
  max: (o, library) =>
    `${library}'s max is sluice's limit: { limit: ${typeof o.max === 'number' ? o.max : 100}, period: '${givenPeriod(o)}' }`,
  keyGenerator: 'key: { key: (req) => req.user?.id }',
  standardHeaders: `headers: ${DRAFT}, 'x', ${BOTH}`,
  legacyHeaders: `headers: 'x' (X-RateLimit-*), 'draft', ${BOTH}`,
  requestPropertyName: () =>
    "sluice always puts the decision on the request: req.rateLimit (Koa ctx.state.rateLimit, Hono c.get('rateLimit'))",
  passOnStoreError: () => `passOnStoreError: true is sluice's ${FAIL_OPEN}; 'closed' answers 503)`,
  validate: () => 'sluice validates every option when rateLimit() is called; there is nothing to turn off',
  identifier: 'name: the policy name in the RateLimit headers',
  onLimitReached: ON_LIMITED,
  // @fastify/rate-limit
  timeWindow: (o) => `@fastify/rate-limit's timeWindow is sluice's period: { period: '${givenPeriod(o)}' }`,
  allowList: "allow: ['127.0.0.1', '10.0.0.0/8', 'api-key-1']",
  skipOnError: () => `skipOnError: true is sluice's ${FAIL_OPEN})`,
  nameSpace: NAME,
  errorResponseBuilder: 'body: (rejection, req) => ({ ... }), or handler',
  onExceeded: ON_LIMITED,
  enableDraftSpec: `headers: ${DRAFT}`,
  addHeaders: ANY_HEADERS,
  addHeadersOnExceeding: ANY_HEADERS,
  ban: () => "ban has no sluice equivalent; blockDuration: '15m' keeps rejecting a key once it went over",
  global: () =>
    "sluice's global is the same option, for the Fastify plugin only: global: false limits only the routes with config: { rateLimit: { ... } }",
  redis: () => redisStore('client: redis'),
  // rate-limiter-flexible
  points: (o) => `${FLEXIBLE} points is sluice's limit: { limit: 10, period: '${givenPeriod(o)}' }`,
  duration: (o) => {
    const seconds = typeof o.duration === 'number' ? o.duration : 60;
    return `${FLEXIBLE} duration (in seconds) is sluice's period ${IN_MS}: duration: ${seconds} is period: '${seconds}s'`;
  },
  keyPrefix: NAME,
  storeClient: () => redisStore('client'),
  insuranceLimiter: "fail: 'insurance' (an in-memory limiter with the same policy)",
  execEvenly: "mode: 'shape' (requests are held for their turn, leaky-bucket)",
};

/** The rate limiter users of each framework usually come from (by the adapter's name); express-rate-limit otherwise. */
const LIBRARY_OF: Readonly<Record<string, string>> = {
  Express: EXPRESS_RATE_LIMIT,
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

const isPositive = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0;

/** The period their window option stands for: windowMs and timeWindow in ms (or a string), duration in seconds. */
function givenPeriod(options: Options): string {
  const { windowMs, timeWindow, duration } = options;
  for (const v of [windowMs, timeWindow]) {
    if (isPositive(v)) return periodOf(v);
    if (typeof v === 'string' && v.trim() !== '') return v;
  }
  return isPositive(duration) ? periodOf(duration * 1000) : '15m';
}

/**
 * The fix for an option name of another library, or undefined; written from the options given (their
 * window becomes the suggested period) and the framework in use (whose rate limiter `max` came from).
 */
export function migrationHint(option: string, options: Options = {}, framework?: string): string | undefined {
  if (!Object.hasOwn(HINTS, option)) return undefined;
  const hint = HINTS[option];
  if (typeof hint === 'string') return `${option} is sluice's ${hint}`;
  return hint?.(options, LIBRARY_OF[framework ?? 'Express'] ?? EXPRESS_RATE_LIMIT);
}
