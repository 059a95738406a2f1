/**
 * sluice — a rate limiter for Node.js. The library entry point: limiters, the memory store and the
 * vocabulary shared by every part (decisions, policies, clocks, errors).
 * @packageDocumentation
 */
export type { Algorithm, Slots } from './algorithms/index.js';
export {
  fixedWindow,
  gcra,
  leakyBucket,
  SlidingLogState,
  slidingLog,
  slidingWindow,
  tokenBucket,
} from './algorithms/index.js';
export type { Clock, ManualClock } from './core/clock.js';
export { createManualClock, systemClock } from './core/clock.js';
export type { Decision, RejectReason } from './core/decision.js';
export type { Duration } from './core/duration.js';
export { parseDuration } from './core/duration.js';
export type { SluiceErrorCode } from './core/errors.js';
export { isSluiceError, SluiceError } from './core/errors.js';
export type { FailMode } from './core/fail-mode.js';
export type { AlgorithmName, PolicyOptions, ResolvedPolicy } from './core/policy.js';
export { ALGORITHMS, isAlgorithmName, isBucketAlgorithm, MAX_SLIDING_LOG_LIMIT, resolvePolicy } from './core/policy.js';
export type { CheckAllItem } from './limiter/check-all.js';
export { checkAll } from './limiter/check-all.js';
export { combineDecisions } from './limiter/combine.js';
export type { ConcurrencyLimiter, ConcurrencyLimiterOptions } from './limiter/concurrency-limiter.js';
export { createConcurrencyLimiter } from './limiter/concurrency-limiter.js';
export type {
  CheckOptions,
  LimitExplanation,
  Limiter,
  LimiterDecision,
  LimiterExplanation,
  LimiterKey,
  LimitResult,
  RefundOptions,
} from './limiter/create-limiter.js';
export { createLimiter } from './limiter/create-limiter.js';
export type { DecisionMessage } from './limiter/decision-channel.js';
export type { OtelApi } from './limiter/opentelemetry.js';
export { observeWithOpenTelemetry } from './limiter/opentelemetry.js';
export type { LimiterOptions, LimitOptions, ResolvedLimit } from './limiter/options.js';
export { resolveCost } from './limiter/options.js';
export type {
  Reservation,
  ReservationOptions,
  Reservations,
  SettleRefusal,
  SettleResult,
} from './limiter/reservations.js';
export { createReservations } from './limiter/reservations.js';
export type { MemoryStore, MemoryStoreOptions, MemoryStoreStats } from './stores/memory/memory-store.js';
export { createMemoryStore } from './stores/memory/memory-store.js';
export type { Lease, LeaseDecision, MaybePromise, Store, StoreItem } from './stores/store.js';
