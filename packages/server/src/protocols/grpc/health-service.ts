/** `grpc.health.v1.Health`: its definition, the Check answer and the Watch response frame. */
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_DIR } from '../../support/proto.js';

/** The standard health method's path on the wire. */
export const HEALTH_CHECK_PATH = '/grpc.health.v1.Health/Check';

/**
 * Services whose health is reported: the server as a whole (`""`), the RLS service by its full name, and
 * `ratelimit` (the name envoy ratelimit registers, so existing probes keep working).
 */
export const HEALTH_SERVICES: ReadonlySet<string> = new Set([
  '',
  'ratelimit',
  'envoy.service.ratelimit.v3.RateLimitService',
]);

/** A health answer: serving or not; undefined for a service this server does not know (gRPC NOT_FOUND). */
export type HealthStatus = 'SERVING' | 'NOT_SERVING';

/** A status a Watch sends: SERVICE_UNKNOWN for a name the server does not know (the stream stays open). */
export type WatchStatus = 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

/** Answers a health check for `service`. */
export type GrpcHealthCheck = (service: string) => Promise<HealthStatus | undefined>;

/** Builds a {@link GrpcHealthCheck} from the service's own health (serving = it can decide). */
export function grpcHealthCheck(serving: () => Promise<boolean>): GrpcHealthCheck {
  return async (service) => {
    if (!HEALTH_SERVICES.has(service)) return undefined;
    return (await serving()) ? 'SERVING' : 'NOT_SERVING';
  };
}

let cached: ServiceDefinition | undefined;

/** `grpc.health.v1.Health` for grpc-js, from the shipped proto. */
export function loadHealthService(): ServiceDefinition {
  if (cached !== undefined) return cached;
  const definition = loadSync('grpc/health/v1/health.proto', {
    includeDirs: [PROTO_DIR],
    keepCase: false,
    enums: String,
    defaults: true,
  });
  cached = definition['grpc.health.v1.Health'] as ServiceDefinition;
  return cached;
}

/** `HealthCheckResponse.ServingStatus` numbers. */
const SERVING_STATUS: Readonly<Record<WatchStatus, number>> = { SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 };

/** A `HealthCheckResponse` as a gRPC length-prefixed frame. */
export function encodeHealthResponseFrame(status: WatchStatus): Buffer {
  return Buffer.from([0, 0, 0, 0, 2, 0x08, SERVING_STATUS[status]]);
}
