/**
 * Option names of the libraries sluice replaces, and what to write instead. An unknown option is an
 * error (`ERR_SLUICE_UNKNOWN_OPTION`) — silently ignoring `windowMs` would leave the default window in
 * force — and when the name is one of theirs, the message says the sluice spelling.
 */

/** Their option name → the fix, in a sentence. */
const HINTS: Readonly<Record<string, string>> = {
  // express-rate-limit
  windowMs: "express-rate-limit's windowMs is sluice's period (milliseconds or a string): { period: '15m' }",
  max: "express-rate-limit's max is sluice's limit: { limit: 100, period: '15m' }",
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
  timeWindow: "@fastify/rate-limit's timeWindow is sluice's period: { period: '1 minute' }",
  allowList: "allowList is sluice's allow: ['127.0.0.1', '10.0.0.0/8', 'api-key-1']",
  skipOnError: "skipOnError: true is sluice's fail: 'open' (the default)",
  nameSpace: "nameSpace is sluice's name (counters of differently named middlewares never mix)",
  errorResponseBuilder: "errorResponseBuilder is sluice's body: (rejection, req) => ({ ... }), or handler",
  onExceeded: "onExceeded is sluice's onLimited: (event) => log(event.ip, event.limitName)",
  enableDraftSpec: "enableDraftSpec is sluice's headers: 'draft' (RateLimit, RateLimit-Policy)",
  addHeaders: "addHeaders is sluice's headers: 'x', 'draft', 'both' (the default) or false",
  addHeadersOnExceeding: "addHeadersOnExceeding is sluice's headers: 'x', 'draft', 'both' (the default) or false",
  ban: "ban has no sluice equivalent; blockDuration: '15m' keeps rejecting a key once it went over",
  global: 'sluice applies the plugin to every route; turn it off on a route with config: { rateLimit: false }',
  redis: "give sluice a store instead: store: createRedisStore({ client: redis }) from 'sluice/redis'",
  // rate-limiter-flexible
  points: "rate-limiter-flexible's points is sluice's limit: { limit: 10, period: '1s' }",
  duration:
    "rate-limiter-flexible's duration (in seconds) is sluice's period (milliseconds or a string): duration: 60 is period: '60s'",
  keyPrefix: "keyPrefix is sluice's name (counters of differently named middlewares never mix)",
  storeClient: "give sluice a store instead: store: createRedisStore({ client }) from 'sluice/redis'",
  insuranceLimiter: "insuranceLimiter is sluice's fail: 'insurance' (an in-memory limiter with the same policy)",
  execEvenly: "execEvenly is sluice's mode: 'shape' (requests are held for their turn, leaky-bucket)",
};

/** The fix for an option name of another library, or undefined. */
export function migrationHint(option: string): string | undefined {
  return Object.hasOwn(HINTS, option) ? HINTS[option] : undefined;
}
