/**
 * `sluice/adaptive`: overload control. A concurrency limit that follows the service's latency
 * (Gradient2, Vegas, AIMD), with guaranteed shares per priority and an optional bounded queue.
 */
export type { AimdOptions } from './aimd.js';
export {
  type AcquireOptions,
  type AdaptiveLimiter,
  createAdaptiveLimiter,
} from './create-adaptive-limiter.js';
export type {
  AdaptiveDecision,
  AdaptivePermit,
  AdaptiveRejection,
  AdaptiveRejectReason,
  AdaptiveStats,
  PriorityFigures,
  ReleaseOutcome,
} from './decision.js';
export type { Gradient2Options } from './gradient2.js';
export type { AdaptiveAlgorithmName, LimitAlgorithm, LimitSample } from './limit-algorithm.js';
export type { AdaptiveLimiterOptions, AdaptiveQueueOptions } from './options.js';
export type {
  ServicePhase,
  SimulationOptions,
  SimulationPoint,
  SimulationResult,
} from './simulate-service.js';
export { simulateService } from './simulate-service.js';
export type { VegasOptions } from './vegas.js';
