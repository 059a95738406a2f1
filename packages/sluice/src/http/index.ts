/**
 * `sluice/http` — the framework-neutral core of the HTTP middleware: client identity (trust proxy,
 * IPv6 subnets), allow/deny lists, the limits of a request, rate-limit headers as plain data and the
 * 429 response. The adapters (`sluice/express`, `/fastify`, `/koa`, `/hono`, `/node`) only translate
 * an `HttpOutcome` into their framework's calls; use this entry point to write another.
 *
 * Nothing here imports `node:*`, so it runs wherever Hono does.
 * @example
 * import { createHttpLimiter } from 'sluice/http';
 * const limiter = createHttpLimiter({ limit: 100, period: '1m' }, {
 *   peer: (req) => req.socket.remoteAddress,
 *   header: (req, name) => req.headers[name],
 *   method: (req) => req.method,
 *   url: (req) => req.url,
 * });
 * @packageDocumentation
 */

export type { FailMode } from '../core/fail-mode.js';
export type { AccessList } from './access-list.js';
export { createAccessList, isAccessList } from './access-list.js';
export type { AdaptiveAdmission, AdaptiveGate } from './adaptive-gate.js';
export { createAdaptiveGate, shareAdaptive } from './adaptive-gate.js';
export type { AdaptiveMiddlewareOptions } from './adaptive-options.js';
export type { ClientIpOptions, ClientIpResolver, ProxyHeader } from './client-ip.js';
export { createClientIpResolver } from './client-ip.js';
export type { RateLimitControls } from './controls.js';
export { parseForwarded, parseXForwardedFor } from './forwarded.js';
export type { AppliedLimit, HeaderList, HeaderMode, LimitHeaderInfo, PolicyFacts, ResetFormat } from './headers.js';
export {
  limitHeaderInfo,
  listedHeaders,
  nextQuotaMs,
  rateLimitHeaders,
  retryAfterSeconds,
  toSeconds,
  toSfString,
} from './headers.js';
export type { HttpLimiter, HttpOutcome } from './http-limiter.js';
export { createHttpLimiter, PASS } from './http-limiter.js';
export type { IpBlockMap } from './ip-block-map.js';
export { createIpBlockMap } from './ip-block-map.js';
export type { MissingKey } from './keys.js';
export { createMiddlewareLimiter } from './middleware-limiter.js';
export type {
  ConcurrencyOptions,
  HttpLimit,
  HttpLimitEntry,
  HttpLimitSpec,
  HttpPolicy,
  LimitedEvent,
  RateLimitOptions,
} from './options.js';
export { RATE_LIMIT_OPTION_KEYS } from './options.js';
export type { ProblemDetails, ProblemSource, ViolatedPolicy } from './problem-details.js';
export { acceptsProblem, PROBLEM_TYPE, problemDetails } from './problem-details.js';
export type { AppliedLimitInfo, RateLimitInfo } from './rate-limit-info.js';
export { previousInfo } from './rate-limit-info.js';
export type { RejectionBody, RejectionInfo, RejectionKind } from './rejection.js';
export { defaultBody, defaultMessage, REJECTION_CODES, REJECTION_STATUS } from './rejection.js';
export type { Awaitable, FrameworkTrust, HttpRequestInfo, RequestAccess, RequestFn } from './request.js';
export { nodeHeader } from './request.js';
export type { TokenBudget } from './token-budget.js';
export type { TokenBudgetOptions, TokenBudgetSettlement } from './token-budget-options.js';
export type { TokenMeter } from './token-meter.js';
export type { SluiceWarningCode } from './warn.js';
