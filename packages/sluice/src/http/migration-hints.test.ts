/**
 * The hint for every option name of another library, word for word: the text users read when they bring
 * express-rate-limit's, @fastify/rate-limit's or rate-limiter-flexible's options to sluice.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migrationHint } from './migration-hints.js';

/** Every hint, for `{ windowMs: 90_000, max: 7 }` given to the Fastify adapter. */
const HINTS: Readonly<Record<string, string>> = {
  windowMs: "express-rate-limit's windowMs is sluice's period (milliseconds or a string): { period: '90s' }",
  max: "@fastify/rate-limit's max is sluice's limit: { limit: 7, period: '90s' }",
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
  timeWindow: "@fastify/rate-limit's timeWindow is sluice's period: { period: '90s' }",
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
  points: "rate-limiter-flexible's points is sluice's limit: { limit: 10, period: '90s' }",
  duration:
    "rate-limiter-flexible's duration (in seconds) is sluice's period (milliseconds or a string): duration: 60 is period: '60s'",
  keyPrefix: "keyPrefix is sluice's name (counters of differently named middlewares never mix)",
  storeClient: "give sluice a store instead: store: createRedisStore({ client }) from 'sluice/redis'",
  insuranceLimiter: "insuranceLimiter is sluice's fail: 'insurance' (an in-memory limiter with the same policy)",
  execEvenly: "execEvenly is sluice's mode: 'shape' (requests are held for their turn, leaky-bucket)",
};

describe('migrationHint', () => {
  it('says the sluice spelling of every option name it knows, word for word', () => {
    for (const [option, hint] of Object.entries(HINTS)) {
      assert.equal(migrationHint(option, { windowMs: 90_000, max: 7 }, 'Fastify'), hint);
    }
  });

  it('writes the period from the window given, and the library from the framework', () => {
    assert.equal(migrationHint('max'), "express-rate-limit's max is sluice's limit: { limit: 100, period: '15m' }");
    assert.equal(
      migrationHint('max', { max: 3, duration: 7200 }, 'NestJS'),
      "@nestjs/throttler's max is sluice's limit: { limit: 3, period: '2h' }",
    );
    assert.equal(
      migrationHint('duration', { duration: 120 }),
      "rate-limiter-flexible's duration (in seconds) is sluice's period (milliseconds or a string): duration: 120 is period: '120s'",
    );
    assert.match(migrationHint('windowMs', { windowMs: 1500 }, 'Node') ?? '', /\{ period: '1500ms' \}$/);
    assert.match(migrationHint('timeWindow', { timeWindow: ' ', windowMs: -1 }) ?? '', /\{ period: '15m' \}$/);
  });

  it('has no hint for other names, including those of Object.prototype', () => {
    for (const option of ['limitt', 'toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      assert.equal(migrationHint(option), undefined, option);
    }
  });
});
