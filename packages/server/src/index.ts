/**
 * sluice-server — the rate-limit service: Envoy's RLS v3 over gRPC, an HTTP/JSON API, a gateway,
 * Prometheus metrics, an admin API and hot-reloaded rules. `sluice serve` is a thin shell around
 * {@link startService}.
 *
 * @example
 * import { startService } from 'sluice-server';
 * const service = await startService({ config: './rules', redis: { url: 'redis://127.0.0.1:6379' } });
 * process.on('SIGTERM', () => service.close());
 * @packageDocumentation
 */
export type { AccessEntry, AccessEntryInput, AccessLists, ListName } from './access-lists.js';
export { createAccessLists, MAX_ACCESS_ENTRIES } from './access-lists.js';
export type { CheckResult } from './check-api.js';
export { MAX_CHECKS } from './check-api.js';
export type { ConfigStatus } from './config-source.js';
export { formatIssues, loadConfig } from './config-source.js';
export type { HeaderMode } from './decide.js';
export type {
  DecisionEvent,
  DecisionHub,
  DecisionListener,
  DecisionOutcome,
  DecisionSource,
} from './decision-events.js';
export { NEAR_LIMIT_RATIO } from './decision-events.js';
export { OVERFLOW_DESCRIPTOR } from './envoy/descriptor-series.js';
export type { EnvoyHeaderNames } from './envoy/response-headers.js';
export { ENVOY_HEADER_NAMES } from './envoy/response-headers.js';
export type { EnvoyStart } from './envoy/settings.js';
export { envoyServiceOptions, isEnvoyStart } from './envoy/settings.js';
export type { EnvoySetting, EnvoySettingStatus } from './envoy/settings-table.js';
export { ENVOY_SETTINGS } from './envoy/settings-table.js';
export { EXAMPLE_CONFIG, EXAMPLE_CONFIG_NAME } from './example-config.js';
export type { H2RlsClient, H2RlsRequest } from './grpc/h2-client.js';
export { createH2RlsClient } from './grpc/h2-client.js';
export { loadRateLimitService, PROTO_DIR, RLS_PROTO, RLS_SERVICE } from './grpc/proto.js';
export type { RlsClient, RlsResponse } from './grpc/rls-client.js';
export { createRlsClient } from './grpc/rls-client.js';
export type { GrpcTlsOptions } from './grpc/tls.js';
export { encodeRateLimitRequestFrame } from './grpc/wire.js';
export type { RouteHandler } from './http/api-server.js';
export { HttpError, sendJson } from './http/respond.js';
export type { Logger, LogLevel } from './logger.js';
export { createLogger, LOG_LEVELS } from './logger.js';
export type { ServiceMetrics } from './metrics.js';
export type { MultiRegionOptions, RegionsView } from './multi-region-backend.js';
export type { RedisOptions } from './redis-backend.js';
export type { ServiceHandle, ServiceOptions } from './service.js';
export { startService } from './service.js';
