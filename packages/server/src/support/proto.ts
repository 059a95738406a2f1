/** Where the package's .proto files are, and the RLS service loaded from them for clients. */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

/**
 * The package's `proto/` directory: two levels above this file's folder both in `src/` (tsx) and in
 * `dist/` (the built package), since `proto/` ships beside them.
 */
export const PROTO_DIR = fileURLToPath(new URL('../../proto/', import.meta.url));

/** The RLS v3 service file, relative to {@link PROTO_DIR}. */
export const RLS_PROTO = 'envoy/service/ratelimit/v3/rls.proto';

/** Fully qualified name of the service Envoy calls. */
export const RLS_SERVICE = 'envoy.service.ratelimit.v3.RateLimitService';

let cached: ServiceDefinition | undefined;

/**
 * Loads `envoy.service.ratelimit.v3.RateLimitService` from the shipped `.proto` files, once. Messages
 * decode with camelCase fields, enums as their names and 64-bit integers as numbers.
 */
export function loadRateLimitService(): ServiceDefinition {
  if (cached !== undefined) return cached;
  if (!existsSync(`${PROTO_DIR}${RLS_PROTO}`)) {
    throw new Error(`sluice: ${PROTO_DIR}${RLS_PROTO} is missing; the package's proto/ directory must ship with it`);
  }
  const definition = loadSync(RLS_PROTO, {
    includeDirs: [PROTO_DIR],
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: false,
    oneofs: true,
  });
  cached = definition[RLS_SERVICE] as ServiceDefinition;
  return cached;
}
