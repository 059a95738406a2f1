/**
 * sluice-server — the rate-limit service: Envoy's RLS v3 over gRPC, an HTTP/JSON API, a gateway,
 * Prometheus metrics, an admin API and hot-reloaded rules. `sluice serve` is a thin shell around
 * {@link startService}.
 *
 * @example
 * import { startService } from 'sluice-server';
 * const service = await startService({ config: './rules', store: { redis: { url: 'redis://127.0.0.1:6379' } } });
 * process.on('SIGTERM', () => service.close());
 * @packageDocumentation
 */

export type { EnvoyStart } from './app/envoy-settings.js';
export { envoyServiceOptions, isEnvoyStart } from './app/envoy-settings.js';
export type { EnvoySetting, EnvoySettingStatus } from './app/envoy-settings-table.js';
export { ENVOY_SETTINGS } from './app/envoy-settings-table.js';
export type { ServiceHandle } from './app/service.js';
export { startService } from './app/service.js';
export type {
  GatewayServiceOptions,
  GrpcServiceOptions,
  HttpServiceOptions,
  ObservabilityOptions,
  ServiceOptions,
  StoreOptions,
} from './app/service-options.js';
export type { MultiRegionOptions, RegionsView } from './backends/multi-region-backend.js';
export type { RedisOptions } from './backends/redis-backend.js';
export type { H2RlsClient, H2RlsRequest } from './clients/h2-client.js';
export { createH2RlsClient } from './clients/h2-client.js';
export type { RlsClient, RlsResponse } from './clients/rls-client.js';
export { createRlsClient } from './clients/rls-client.js';
export type { ConfigStatus } from './config/config-source.js';
export { formatIssues, loadConfig } from './config/config-source.js';
export { EXAMPLE_CONFIG, EXAMPLE_CONFIG_NAME } from './config/example-config.js';
export type { AccessEntry, AccessEntryInput, AccessLists, ListName } from './core/access-lists.js';
export { createAccessLists, MAX_ACCESS_ENTRIES } from './core/access-lists.js';
export type { ResponseHeaderStyle } from './core/decide.js';
export type { EnvoyHeaderNames } from './core/envoy-response-headers.js';
export { ENVOY_HEADER_NAMES } from './core/envoy-response-headers.js';
export type {
  DecisionEvent,
  DecisionHub,
  DecisionListener,
  DecisionOutcome,
  DecisionSource,
} from './observability/decision-events.js';
export { NEAR_LIMIT_RATIO } from './observability/decision-events.js';
export { OVERFLOW_DESCRIPTOR } from './observability/descriptor-series.js';
export type { Logger, LogLevel } from './observability/logger.js';
export { createLogger, LOG_LEVELS } from './observability/logger.js';
export type { ServiceMetrics } from './observability/metrics.js';
export type { GrpcTlsOptions } from './protocols/grpc/tls.js';
export type { RouteHandler } from './protocols/http/api-server.js';
export type { CheckResult } from './protocols/http/check-api.js';
export { MAX_CHECKS } from './protocols/http/check-api.js';
export { sendJson } from './protocols/http/respond.js';
export { loadRateLimitService, RLS_PROTO, RLS_SERVICE } from './support/proto.js';
