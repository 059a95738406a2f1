/**
 * The options of `rateLimit()`, shared by every adapter: the limits, how requests are keyed and costed, what a
 * rejection looks like, and the list of their names that validation checks against.
 */

import type { Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import type { Duration } from '../core/duration.js';
import type { FailMode } from '../core/fail-mode.js';
import type { AlgorithmName } from '../core/policy.js';
import type { RulesEngine } from '../rules/engine-types.js';
import type { Store } from '../stores/store.js';
import type { AccessList } from './access-list.js';
import type { AdaptiveMiddlewareOptions } from './adaptive-options.js';
import type { ClientIpOptions } from './client-ip.js';
import type { ResponseCountingOptions } from './count-by-response.js';
import type { HeaderMode, ResetFormat } from './headers.js';
import type { MissingKey } from './keys.js';
import type { RejectionInfo } from './rejection.js';
import type { HttpRequestInfo, RequestFn } from './request.js';
import type { TokenBudgetOptions } from './token-budget-options.js';

/**
 * A concurrency limit in the middleware (Stripe's second limiter): at most `limit` requests of one key
 * in flight at once. A place is taken once the rate limits passed and given back when the handler has
 * ended the response (a client that goes away first does not free it early); a place a crashed process
 * never gave back lapses after `lease`.
 */
export interface ConcurrencyOptions {
  /** Most requests of one key in flight at once. */
  limit: number;
  /** The longest a request holds its place if it is never given back. @default '1m' */
  lease?: Duration;
  /** Names the limit in the headers (`qu="concurrent-requests"`). @default 'inflight' */
  name?: string;
}

/** A limit's policy, all of it fixed. */
export interface HttpPolicy {
  /** @default 'fixed-window' ('leaky-bucket' in shape mode) */
  algorithm?: AlgorithmName;
  /** Requests per period. */
  limit: number;
  /** The period, in ms or as a duration string (`'1m'`). */
  period: Duration;
  /** Bucket capacity for token-bucket, leaky-bucket and gcra. @default limit */
  burst?: number;
  /** Once rejected, keep rejecting this long. @default 0 */
  blockDuration?: Duration;
}

/** A limit as a function of the request returns this (or null/undefined: the limit does not apply). */
export interface HttpLimitSpec extends HttpPolicy {
  /** The limit's name (headers, counters). @default `limit<index>` */
  name?: string;
  /** The key to count under; omitted = the middleware's `key` (default: client IP); null = missing (see `missingKey`). */
  key?: string | number | null;
  /** What a missing key means for this limit. @default the middleware's `missingKey` */
  missingKey?: MissingKey;
}

/** One of several limits on a request. */
export interface HttpLimit<Req> extends Omit<HttpPolicy, 'limit'> {
  /** Names the limit in headers and keeps its counters apart. @default `limit<index>` */
  name?: string;
  /** Requests per period: a number, or a function of the request (per-plan limits). */
  limit: number | RequestFn<Req, number>;
  /** The key to count under (a string or a number); null/undefined = missing, see `missingKey`. @default the middleware's `key` */
  key?: RequestFn<Req, string | number | null | undefined>;
  /** What a missing key means for this limit. @default the middleware's `missingKey` */
  missingKey?: MissingKey;
}

/** A limit: fixed, or a whole policy computed from the request (per-tenant policies). */
export type HttpLimitEntry<Req> = HttpLimit<Req> | RequestFn<Req, HttpLimitSpec | null | undefined>;

/** Passed to `onLimited` for every request over a limit (also in shadow mode, where it still passes). */
export interface LimitedEvent<Req> {
  readonly req: Req;
  readonly ip: string;
  readonly decision: Decision;
  /** The limit that rejected (the one the headers describe). */
  readonly limitName: string;
  /** True when `shadow` let the request through anyway. */
  readonly shadow: boolean;
}

/**
 * Options of `rateLimit()` in every adapter. Give one limit inline (`limit`, `period`,
 * `algorithm`, …) or several under `limits`. Every option that is a function receives the framework's
 * request and a neutral `HttpRequestInfo`, and may return a promise.
 */
export interface RateLimitOptions<Req = unknown> extends ClientIpOptions, ResponseCountingOptions<Req> {
  /** @default 'fixed-window' ('leaky-bucket' in shape mode) */
  algorithm?: AlgorithmName;
  /** Requests per period: a number or a function of the request (e.g. free 60/min vs paid 1000/min). */
  limit?: number | RequestFn<Req, number>;
  /** The period, in ms or as a duration string. */
  period?: Duration;
  /** Bucket capacity (bucket algorithms). @default limit */
  burst?: number;
  /** Once rejected, keep rejecting this long. @default 0 */
  blockDuration?: Duration;
  /** Several limits, all or nothing: a request passes only if every limit that applies passes. */
  limits?: readonly HttpLimitEntry<Req>[];
  /**
   * Limits from rules instead (`createRulesEngine` of `sluice/rules`): the `http:` section of each domain
   * turns the request into descriptors, and the engine decides them. Exclusive with inline limits,
   * `limits`, `key` and `store` (the engine has them).
   */
  rules?: RulesEngine;
  /** Names this middleware: the policy name of an inline limit in headers, and its counters' namespace. @default 'default' */
  name?: string;
  /**
   * The key to count under: a string or a number (a user id). null, undefined or `''` is a missing
   * key, which `missingKey` decides. @default the client IP (IPv6 masked)
   */
  key?: RequestFn<Req, string | number | null | undefined>;
  /**
   * What a missing key means: `'ip'` counts the request under the client's address, `'skip'` lets it
   * through unlimited (warned about once per process), `'reject'` answers 400. Per limit too. @default 'ip'
   */
  missingKey?: MissingKey;
  /**
   * Two middlewares with the same policy on one store would share counters, which is an error at
   * construction (`ERR_SLUICE_SHARED_COUNTERS`) unless they have distinct `name`s — or both say
   * `shared: true`, to share them on purpose. @default false
   */
  shared?: boolean;
  /** Where counters live. @default a new memory store */
  store?: Store;
  /** Where time comes from (tests inject a manual clock). @default the system clock */
  clock?: Clock;
  /** What to do when the store fails: `'open'` (pass, `X-RateLimit-Degraded: 1`), `'closed'` (503), `'insurance'`. */
  fail?: FailMode;
  /** Under `fail: 'insurance'`, the share of each limit the in-memory fallback allows. */
  insuranceShare?: number;
  /** True = neither counted nor limited, no headers. */
  skip?: RequestFn<Req, boolean>;
  /** Never limited, not counted: IP addresses, CIDR blocks and keys. */
  allow?: readonly string[] | AccessList;
  /** Always refused with 403: IP addresses, CIDR blocks and keys. `allow` wins over `deny`. */
  deny?: readonly string[] | AccessList;
  /**
   * At most this many requests of one key in flight at once (a number, or `{ limit, lease, name }`):
   * a place is taken once the rate limits passed and given back when the response is sent. Listed in
   * `RateLimit-Policy` as `"inflight";q=<limit>;qu="concurrent-requests"`.
   */
  concurrency?: number | ConcurrencyOptions;
  /** Units a request takes (0 = look without taking). @default 1 */
  cost?: number | RequestFn<Req, number>;
  /** `'reject'` answers 429 when over; `'shape'` holds a request for its `delayMs` (leaky bucket) and passes it. @default 'reject' */
  mode?: 'reject' | 'shape';
  /** Shape mode: the longest a request is held; a longer wait is a 429. @default 1000 */
  maxDelayMs?: number;
  /** Shape mode: how to wait (tests inject one that does not). @default a setTimeout promise */
  sleep?: (ms: number) => Promise<void>;
  /** Count and report (`onLimited`) but never reject, and send no rate-limit headers. @default false */
  shadow?: boolean;
  /** Which rate-limit headers to send. @default 'both' */
  headers?: HeaderMode;
  /**
   * How `X-RateLimit-Reset` is written: `'seconds'` from now (the same number as the `t` of the
   * `RateLimit` header), or `'epoch'`, the Unix time in seconds (GitHub's and express-rate-limit's
   * legacy headers). @default 'seconds'
   */
  xRateLimitReset?: ResetFormat;
  /** Status of a rejection over the limit. @default 429 */
  statusCode?: number;
  /** The rejection message in the default body. */
  message?: string | ((info: RejectionInfo) => string);
  /** A custom rejection body: a string is sent as is (text/plain), anything else as JSON. */
  body?: (info: RejectionInfo, req: Req) => unknown;
  /** Called for every request over a limit (in shadow mode too), e.g. to log it. */
  onLimited?: (event: LimitedEvent<Req>) => void;
  /** How to read the TCP peer's address, for runtimes the adapter does not know. @default the adapter's */
  peerAddress?: (req: Req) => string | undefined;
  /**
   * Overload control: after the rate limits pass, a request takes a place in an adaptive concurrency
   * limit (`sluice/adaptive`) by its `priority`, or is shed with 503 and `Retry-After`. The place is
   * given back when the response is done; a 5xx or a response that never went out counts as dropped.
   * May be the only option (no rate limit).
   */
  adaptive?: AdaptiveMiddlewareOptions<Req>;
  /**
   * A token budget for an LLM API (`sluice/llm`'s `createTokenLimiter`): after the rate limits pass, a
   * request reserves its estimated input and its `max_tokens` (or is refused with 429), and the
   * response — JSON or a server-sent event stream, read as it passes — settles what it really used; a
   * client that leaves mid-stream is charged what was produced. Adds OpenAI's `x-ratelimit-*-requests`
   * and `-tokens` headers. May be the only option (no rate limit).
   */
  tokenBudget?: TokenBudgetOptions<Req>;
}

/** Option names every adapter accepts; adapters add their own (e.g. `handler`). */
export const RATE_LIMIT_OPTION_KEYS: ReadonlySet<string> = new Set([
  'algorithm',
  'limit',
  'period',
  'burst',
  'blockDuration',
  'limits',
  'rules',
  'name',
  'key',
  'missingKey',
  'shared',
  'store',
  'clock',
  'fail',
  'insuranceShare',
  'skip',
  'allow',
  'deny',
  'cost',
  'concurrency',
  'mode',
  'maxDelayMs',
  'sleep',
  'shadow',
  'headers',
  'xRateLimitReset',
  'skipSuccessfulRequests',
  'skipFailedRequests',
  'requestWasSuccessful',
  'responseCost',
  'statusCode',
  'message',
  'body',
  'onLimited',
  'peerAddress',
  'trustProxy',
  'proxyHeader',
  'ipv6Subnet',
]);

/** The info passed to functions of the request (re-exported for adapter typings). */
export type { HttpRequestInfo };
