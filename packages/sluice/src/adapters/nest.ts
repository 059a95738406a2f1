/**
 * `sluice/nest` — rate limiting for NestJS: `RateLimitModule` (forRoot / forRootAsync), `RateLimitGuard`,
 * the `@RateLimit()` and `@SkipRateLimit()` decorators, on the Express and Fastify platforms, in GraphQL
 * resolvers and per WebSocket message; plus `createThrottlerStorage()`, a store for @nestjs/throttler.
 * Same headers and 429 body as every sluice adapter.
 * @packageDocumentation
 */

export type { RateLimitOptions, RejectionInfo } from '../http/index.js';
export type { NestRateLimitOptions, RateLimitCore } from './nest/core.js';
export { createRateLimitCore } from './nest/core.js';
export type { ClassOrMethodDecorator, RouteLimitOptions } from './nest/decorators.js';
export { RateLimit, SkipRateLimit } from './nest/decorators.js';
export { RATE_LIMIT_CORE, RateLimitGuard } from './nest/guard.js';
export type { RateLimitModuleAsyncOptions } from './nest/module.js';
export { RATE_LIMIT_OPTIONS, RateLimitModule } from './nest/module.js';
export type { NestTarget, NestTargetType } from './nest/target.js';
export type {
  ThrottlerStorageLike,
  ThrottlerStorageOptions,
  ThrottlerStorageRecord,
} from './nest/throttler-storage.js';
export { createThrottlerStorage } from './nest/throttler-storage.js';
