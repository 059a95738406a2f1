/** The gRPC server's options and handle (kept apart so the server's parts can share them). */
import type { Decider } from '../../core/decide.js';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import type { GrpcHealthCheck } from './health-service.js';
import type { HealthWatch } from './health-watch.js';
import type { ReceiveLimits } from './receive-guard.js';
import type { TlsMaterial } from './tls.js';

/** A listening gRPC server. */
export interface GrpcHandle {
  /** The bound TCP port; 0 on a unix socket. */
  readonly port: number;
  /** With TLS: serve new connections with these certificates from now on. */
  updateTls?(material: TlsMaterial): void;
  /** Stops taking calls, lets in-flight calls finish for up to `graceMs`, then cancels the rest. */
  close(graceMs: number): Promise<void>;
}

/** Server keepalive pings (grpc-go's server keepalive `Time` and `Timeout`). */
export interface KeepaliveOptions {
  /** Ping each connection this often. @default 2 h (grpc-go's default) */
  readonly timeMs: number;
  /** Cut a connection whose ping is not answered within this. @default 20 s (grpc-go's default) */
  readonly timeoutMs: number;
}

/** grpc-go's server keepalive defaults, which envoy ratelimit runs with. */
export const DEFAULT_KEEPALIVE: KeepaliveOptions = { timeMs: 2 * 3_600_000, timeoutMs: 20_000 };

/** Options of {@link startGrpcServer}. */
export interface GrpcServerOptions {
  host: string;
  port: number;
  /** Listen on this unix socket instead of host:port (envoy's GRPC_UDS). */
  socket?: string;
  decider: Decider;
  metrics: ServiceMetrics;
  logger: Logger;
  /** Bounds on unfinished request messages (size, per connection, in total, time). @default DEFAULT_RECEIVE_LIMITS */
  limits?: Partial<ReceiveLimits>;
  /** Most concurrent streams one connection may open (HTTP/2 SETTINGS). @default 4096 */
  maxStreams?: number;
  /** TLS (mutual TLS when the material has a CA); `clientSan`: a DNS name client certificates must carry. */
  tls?: { material: TlsMaterial; clientSan?: string };
  /** Answers `grpc.health.v1.Health/Check`. */
  health?: GrpcHealthCheck;
  /** Serves `grpc.health.v1.Health/Watch` (with `health`). */
  healthWatch?: HealthWatch;
  /** GOAWAY connections older than this, ±10% (envoy's GRPC_MAX_CONNECTION_AGE). @default none */
  maxConnectionAgeMs?: number;
  /** Then cut them after this long (GRPC_MAX_CONNECTION_AGE_GRACE). @default none: wait for their streams */
  maxConnectionAgeGraceMs?: number;
  /** Ping connections; cut those that do not answer. @default DEFAULT_KEEPALIVE */
  keepalive?: KeepaliveOptions;
  /**
   * Let grpc-js answer ShouldRateLimit too, instead of the lean path on grpc-js's connections (same
   * answers, about 1.4× the CPU per call). For comparisons. @default false
   */
  rateLimitOnGrpcJs?: boolean;
}
