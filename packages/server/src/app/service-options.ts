/**
 * The options of `startService`, grouped by concern: the rules and decisions at the top, then one group
 * each for the store, the HTTP API, gRPC, the gateway and observability. Each option keeps one name from
 * its CLI flag (docs/cli.md) to the code that uses it.
 */
import type { Clock, MemoryStoreOptions, Store } from 'sluice';
import { SluiceError } from 'sluice';
import type { AdaptiveLimiterOptions } from 'sluice/adaptive';
import type { FailMode } from 'sluice/rules';
import type { MultiRegionOptions } from '../backends/multi-region-backend.js';
import type { RedisOptions } from '../backends/redis-backend.js';
import type { SqlStoreOptions } from '../backends/sql-backend.js';
import type { XdsOptions } from '../config/xds/xds-options.js';
import type { ResponseHeaderStyle } from '../core/decide.js';
import { type CaptureOptions, checkCaptureOptions } from '../observability/capture/capture-options.js';
import type { EnvoyStatsOptions } from '../observability/envoy-stats/envoy-telemetry.js';
import type { Logger, LogLevel } from '../observability/logger.js';
import type { OtelMetricsOptions } from '../observability/otel-metrics/otel-metrics-options.js';
import type { TracingOptions } from '../observability/tracing/tracing-options.js';
import type { GatewayLimits } from '../protocols/gateway/gateway-limits.js';
import type { KeepaliveOptions } from '../protocols/grpc/grpc-server.js';
import type { HealthWatchOptions } from '../protocols/grpc/health-watch.js';
import type { ReceiveLimits } from '../protocols/grpc/receive-guard.js';
import type { GrpcTlsOptions } from '../protocols/grpc/tls.js';
import type { RouteHandler } from '../protocols/http/api-server.js';

/** Where the counters live, when the service builds the store itself. At most one of `redis` and `multiRegion`. */
export interface StoreOptions {
  /** A Redis store: `{ url }` for one server, `{ cluster: ['host:port', ...] }` for a Cluster. */
  redis?: RedisOptions;
  /**
   * A second Redis for the limits whose period is one second (envoy's REDIS_PERSECOND); the others stay
   * in `redis`. Needs `redis`.
   */
  redisPerSecond?: RedisOptions;
  /** Run in one region of several (docs/multi-region.md): a multi-region store. */
  multiRegion?: MultiRegionOptions;
  /** Sizes the memory store used without `redis` or `multiRegion`, e.g. `{ maxKeys }`. */
  memory?: MemoryStoreOptions;
  /** A SQL store (`--store postgres://…|mysql://…|sqlite:PATH`), instead of Redis. */
  sql?: SqlStoreOptions;
}

/** The HTTP API (`/json`, `/v1/check`, `/healthcheck`, `/metrics`, `/admin`, the dashboard). */
export interface HttpServiceOptions {
  /** @default 8080 */
  port?: number;
  /** Largest API request body. @default 1 MiB */
  maxBodyBytes?: number;
  /** Extra routes by exact path (e.g. the dashboard's `/api/...`). */
  routes?: Readonly<Record<string, RouteHandler>>;
  /** Where the dashboard's static files are; false serves none. @default the package's `dashboard/` */
  dashboardDir?: string | false;
  /**
   * `/v1/check` accepts a caller's `nowMs`, for tests that drive time through `sluice/remote`
   * (`clock: 'client'`). Never in production: a caller could move its counters in time. @default false
   */
  clientClock?: boolean;
  /** How long a `/v1/check` reservation may stay unsettled before it lapses, charged in full. @default 10 minutes */
  reservationTtlMs?: number;
  /** Most `/v1/check` reservations held at once; a `reserve` past it is refused. @default 100_000 */
  maxReservations?: number;
}

/** The Envoy RLS v3 gRPC server. */
export interface GrpcServiceOptions {
  /** @default the service's `host` */
  host?: string;
  /** @default 8081 */
  port?: number;
  /**
   * Listen on this unix socket instead of `host:port` (envoy's GRPC_UDS). A socket file left by a dead
   * process is replaced; a live one stops the start.
   */
  socket?: string;
  /** TLS, mutual TLS with `clientCaFile`; the files are reloaded when they change. @default plaintext */
  tls?: GrpcTlsOptions;
  /**
   * Bounds on the request messages held before they are complete: largest message, bytes per connection
   * and in total, and how long a message may take to arrive. @default DEFAULT_RECEIVE_LIMITS
   */
  limits?: Partial<ReceiveLimits>;
  /** Most concurrent streams per connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). @default 4096 */
  maxStreams?: number;
  /**
   * Most open `grpc.health.v1.Health/Watch` calls in all, per connection and per client address (so one
   * client cannot take the slots others' health checking needs). @default 1000, 16, 64
   */
  watchLimits?: Pick<HealthWatchOptions, 'maxWatches' | 'maxWatchesPerConnection' | 'maxWatchesPerClient'>;
  /** GOAWAY connections older than this, ±10% (envoy's GRPC_MAX_CONNECTION_AGE). @default none */
  maxConnectionAgeMs?: number;
  /** Cut connections this long after their age's GOAWAY. @default none: when their calls end */
  maxConnectionAgeGraceMs?: number;
  /** Keepalive pings; a connection that does not answer is cut. @default every 2 h, 20 s to answer (grpc-go's) */
  keepalive?: KeepaliveOptions;
}

/** Gateway mode: a reverse proxy that applies the config's `http:` rules before it forwards. */
export interface GatewayServiceOptions {
  /** Where allowed requests go, e.g. `http://127.0.0.1:3000`. */
  upstream: string;
  /** @default 8000 */
  port?: number;
  /** Proxies whose `X-Forwarded-For` is believed (CIDRs, addresses, `loopback`, ...). @default none */
  trustProxy?: string | readonly string[];
  /** IPv6 clients count under their network of this prefix length (one subscriber's /56). @default 56 */
  ipv6Subnet?: number;
  /** Timeouts and in-flight caps. @default DEFAULT_GATEWAY_LIMITS */
  limits?: Partial<GatewayLimits>;
  /** Protect the upstream with an adaptive concurrency limit (`sluice/adaptive`): 503 past it. @default off */
  adaptive?: AdaptiveLimiterOptions;
}

/** Logs, metrics and traces. */
export interface ObservabilityOptions {
  /** @default a pino logger on stdout at `logLevel` */
  logger?: Logger;
  /** @default 'info' */
  logLevel?: LogLevel;
  /** Collect no metrics: /metrics and the metrics listener answer an empty exposition (envoy's DISABLE_STATS). @default false */
  disableStats?: boolean;
  /** Also serve the Prometheus metrics on a listener of their own (envoy's USE_PROMETHEUS, PROMETHEUS_ADDR). */
  metricsListener?: { host: string; port: number; path: string };
  /** Extra constant labels on every Prometheus series (envoy's EXTRA_TAGS). */
  metricsLabels?: Readonly<Record<string, string>>;
  /**
   * Most per-value series of `detailed_metric` / `value_to_metric` rules
   * (`sluice_descriptor_decisions_total`); later values share one overflow series. @default 10_000
   */
  maxDescriptorSeries?: number;
  /**
   * Share of a limit used past which an allowed decision counts as `near_limit` in the metrics (envoy's
   * NEAR_LIMIT_RATIO). @default 0.8
   */
  nearLimitRatio?: number;
  /** OpenTelemetry tracing of decisions, exported over OTLP (envoy's TRACING_*). @default off */
  tracing?: TracingOptions;
  /** Decision counts pushed over OTLP by the OpenTelemetry SDK, beside Prometheus (OTEL_METRICS_EXPORTER=otlp). @default off */
  otelMetrics?: OtelMetricsOptions;
  /**
   * envoy ratelimit's own stats (statsd over UDP, its Prometheus names on `metricsListener`), set by envoy
   * mode from USE_STATSD, STATSD_*, USE_PROMETHEUS and EXTRA_TAGS. sluice's metrics are unchanged. @default off
   */
  envoyStats?: EnvoyStatsOptions;
}

/** Options of `startService`. Every port may be 0 (any free port; read the bound one from the handle). */
export interface ServiceOptions {
  /** Interface every listener binds to (gRPC: unless `grpc.host` says otherwise). @default '0.0.0.0' */
  host?: string;
  /** Rule files or directories. None: the built-in example (`EXAMPLE_CONFIG`). */
  config?: string | readonly string[];
  /** Take the rules from an xDS management server instead of files (envoy's CONFIG_TYPE=GRPC_XDS_SOTW). */
  xds?: XdsOptions;
  /** Watch the config files and reload on change. @default true */
  watch?: boolean;
  /** A directory whose symlink swap means "reload the config" (envoy's RUNTIME_ROOT). */
  configRoot?: string;
  /** Merge config files of one domain instead of refusing them (envoy's MERGE_DOMAIN_CONFIG). @default false */
  mergeDomains?: boolean;
  /** Start with no rules when the config paths hold no rule file yet (envoy ratelimit does). @default false */
  startWithoutConfig?: boolean;
  /** What to do when the store fails, for rules that do not say. @default the store's error: UNAVAILABLE / 503 */
  fail?: FailMode;
  /**
   * With `fail: 'insurance'`: the share of each limit this process enforces on its own while the store
   * is down (e.g. 0.25 when four processes share the limit). @default 1
   */
  insuranceShare?: number;
  /** Put every rule in shadow mode (count and report, never reject). @default false */
  shadow?: boolean;
  /** Every descriptor in quota mode (envoy's QUOTA_MODE). @default false */
  quota?: boolean;
  /** Rate-limit headers on responses: sluice's, none, or envoy's three (`LIMIT_RESPONSE_HEADERS_ENABLED`). @default 'sluice' */
  headers?: ResponseHeaderStyle;
  /** Add envoy ratelimit's `dynamic_metadata` to responses (RESPONSE_DYNAMIC_METADATA). @default false */
  dynamicMetadata?: boolean;
  /** Health is 503 / NOT_SERVING while no domain is loaded (HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED). @default false */
  healthNeedsConfig?: boolean;
  /** Token of the admin API; admin is off without one. */
  adminToken?: string;
  /** How long shutdown waits for in-flight requests before cutting them. @default 10_000 */
  shutdownGraceMs?: number;
  /** @default the system clock */
  clock?: Clock;
  /** A store to use as is (the caller closes it), or how to build one. @default a memory store */
  store?: Store | StoreOptions;
  http?: HttpServiceOptions;
  grpc?: GrpcServiceOptions;
  /** Gateway mode (off without it). */
  gateway?: GatewayServiceOptions;
  observability?: ObservabilityOptions;
  /** Write sampled decisions as NDJSON for `sluice replay` (`sluice serve --capture DIR`). @default off */
  capture?: CaptureOptions;
}

/** True when `store` is a store to use as is, not options to build one. */
export function isStoreInstance(store: Store | StoreOptions | undefined): store is Store {
  return store !== undefined && typeof (store as Store).check === 'function';
}

/** Refuses combinations that cannot be meant, before anything is opened. */
export function checkServiceOptions(options: ServiceOptions): void {
  const store = isStoreInstance(options.store) ? undefined : options.store;
  if (store?.redisPerSecond !== undefined && store.redis === undefined) {
    throw invalid('store.redisPerSecond', 'needs store.redis (the Redis of the other limits)');
  }
  if (store?.multiRegion !== undefined && store.redis !== undefined) {
    throw invalid('store.multiRegion', "give it instead of store.redis (this region's Redis is one of its options)");
  }
  if (store?.sql !== undefined && (store.redis !== undefined || store.multiRegion !== undefined)) {
    throw invalid('store.sql', 'give a SQL store (--store) or Redis (--redis, --region), not both');
  }
  if (
    store?.memory !== undefined &&
    (store.redis !== undefined || store.multiRegion !== undefined || store.sql !== undefined)
  ) {
    throw invalid('store.memory', 'sizes the memory store the service creates; with Redis there is none');
  }
  if (options.xds !== undefined && options.config !== undefined && [options.config].flat().length > 0) {
    throw invalid('xds', 'give config files or an xDS server, not both');
  }
  if (options.capture !== undefined) checkCaptureOptions(options.capture);
}

function invalid(option: string, message: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_OPTION', `${option}: ${message}`, { option });
}
