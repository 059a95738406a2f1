/**
 * Every environment variable envoyproxy/ratelimit reads (its `src/settings/settings.go`), and what sluice
 * does with it when started the envoy way. docs/envoy.md shows this table, and a test keeps the two in
 * step, so the page never promises what the code does not do.
 */

/** What sluice does with one envoy setting. */
export type EnvoySettingStatus = 'honoured' | 'not applicable' | 'not yet';

/** One envoy ratelimit setting. */
export interface EnvoySetting {
  readonly name: string;
  readonly status: EnvoySettingStatus;
  /** How it maps onto sluice, or why it does not apply. */
  readonly note: string;
}

const h = (name: string, note: string): EnvoySetting => ({ name, status: 'honoured', note });
const na = (name: string, note: string): EnvoySetting => ({ name, status: 'not applicable', note });

const MEMCACHE = 'sluice has no Memcached backend (BACKEND_TYPE=memcache is refused at start)';
const PER_SECOND = 'with REDIS_PERSECOND=true: as the REDIS_ setting, for the Redis of the per-second limits';
const XDS = 'with CONFIG_TYPE=GRPC_XDS_SOTW';
/** The xDS settings' status, one switch for all of them. */
const xds = h;

/** envoy ratelimit's settings, in the order of its settings.go. */
export const ENVOY_SETTINGS: readonly EnvoySetting[] = [
  h('HOST', 'interface of the HTTP API (/json, /healthcheck, /metrics)'),
  h('PORT', 'HTTP API port (default 8080)'),
  na('DEBUG_HOST', 'there is no Go pprof debug server; the loaded rules are at GET /api/rules, stats at /metrics'),
  na('DEBUG_PORT', 'as DEBUG_HOST'),
  h('GRPC_UDS', 'gRPC listens on this unix socket instead of GRPC_HOST:GRPC_PORT (a stale socket file is replaced)'),
  h('GRPC_HOST', 'interface of the gRPC server'),
  h('GRPC_PORT', 'gRPC port (default 8081)'),
  h('GRPC_MAX_CONNECTION_AGE', 'both gRPC servers: GOAWAY after this age ±10% (default 24h; 0 = never)'),
  h(
    'GRPC_MAX_CONNECTION_AGE_GRACE',
    'calls in flight at the GOAWAY may run this long, then the connection is cut (default 1h; 0 = no cut)',
  ),
  h('GRPC_SERVER_USE_TLS', 'gRPC over TLS'),
  h('GRPC_SERVER_TLS_CERT', 'server certificate chain file; reloaded when it changes'),
  h('GRPC_SERVER_TLS_KEY', 'server private key file; reloaded when it changes'),
  h('GRPC_CLIENT_TLS_CACERT', 'mutual TLS: client certificates must chain to this CA; reloaded when it changes'),
  h('GRPC_CLIENT_TLS_SAN', 'mutual TLS: a client certificate must carry this DNS name'),
  h('LOG_LEVEL', 'trace, debug, info, warn, error, fatal (any case; panic = fatal)'),
  na('LOG_FORMAT', 'logs are always JSON lines (LOG_FORMAT=json); text is not offered'),
  h('CONFIG_TYPE', 'FILE (default), or GRPC_XDS_SOTW: RateLimitConfig resources over ADS, state of the world'),
  xds(
    'FORCE_START_WITHOUT_INITIAL_CONFIG',
    `${XDS}; serve before the first config arrives (every domain unknown = OK)`,
  ),
  xds('CONFIG_GRPC_XDS_NODE_ID', `${XDS}; the node id sent to the management server (default "default")`),
  xds('CONFIG_GRPC_XDS_NODE_METADATA', `${XDS}; node metadata, "k1=v1,k2=v2"`),
  xds('CONFIG_GRPC_XDS_SERVER_URL', `${XDS}; host:port of the management server (default localhost:18000)`),
  na(
    'CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL',
    'envoy ratelimit hands it to a stream-retry interceptor whose retries are off by default, so it changes nothing there either; reconnect waits follow XDS_CLIENT_BACKOFF_*',
  ),
  xds('CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS', `${XDS}; metadata sent with the stream, "k1:v1,k2:v2"`),
  xds('CONFIG_GRPC_XDS_SERVER_USE_TLS', `${XDS}; TLS to the management server`),
  xds('CONFIG_GRPC_XDS_CLIENT_TLS_CERT', `${XDS}; client certificate for mutual TLS`),
  xds('CONFIG_GRPC_XDS_CLIENT_TLS_KEY', `${XDS}; client key for mutual TLS`),
  xds('CONFIG_GRPC_XDS_SERVER_TLS_CACERT', `${XDS}; CA of the management server's certificate`),
  xds('CONFIG_GRPC_XDS_SERVER_TLS_SAN', `${XDS}; name to verify in the server's certificate`),
  xds('XDS_CLIENT_BACKOFF_INITIAL_INTERVAL', `${XDS}; first and shortest wait before reconnecting (default 10s)`),
  xds('XDS_CLIENT_BACKOFF_MAX_INTERVAL', `${XDS}; longest wait before reconnecting (default 60s)`),
  xds(
    'XDS_CLIENT_BACKOFF_RANDOM_FACTOR',
    `${XDS}; each wait is the last times this, as envoy's backoff library uses it (default 0.5: every wait is the initial one)`,
  ),
  xds(
    'XDS_CLIENT_BACKOFF_JITTER',
    `${XDS}; pick each wait at random between the initial one and the computed one (default true)`,
  ),
  xds('XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES', `${XDS}; largest DiscoveryResponse accepted (default 4 MiB)`),
  na('USE_DOG_STATSD', 'sluice sends plain statsd (USE_STATSD), not DogStatsD tags; set, it is warned about'),
  na('USE_DOG_STATSD_MOGRIFIERS', 'as USE_DOG_STATSD'),
  h(
    'USE_STATSD',
    "send envoy ratelimit's stat names over UDP statsd (default true, as envoy; false beside USE_PROMETHEUS unless set)",
  ),
  h('STATSD_HOST', 'host of that statsd (default localhost), resolved at each flush'),
  h('STATSD_PORT', 'UDP port of that statsd (default 8125)'),
  h(
    'EXTRA_TAGS',
    '"k1:v1,k2:v2": constant labels on every Prometheus series (k1="v1") and the `.__k1=v1` suffix on every statsd name; a name sluice or envoy uses is refused',
  ),
  h('STATS_FLUSH_INTERVAL', 'how often statsd lines are sent (default 10s; 100ms to 1h)'),
  h('DISABLE_STATS', 'nothing is counted; /metrics (and PROMETHEUS_ADDR) answer an empty exposition'),
  h(
    'USE_PROMETHEUS',
    "serve envoy ratelimit's Prometheus names (ratelimit_service_*) after sluice's on PROMETHEUS_ADDR; GET /metrics keeps sluice's",
  ),
  h('PROMETHEUS_ADDR', 'address of that metrics listener (default :9090)'),
  h('PROMETHEUS_PATH', 'path of that metrics listener (default /metrics)'),
  na(
    'PROMETHEUS_MAPPER_YAML',
    "not read: envoy ratelimit's default mapping names the series (set, it is warned about)",
  ),
  h('PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS', 'ratelimit_service_response_time_seconds observed in milliseconds'),
  h('RUNTIME_ROOT', 'rules are read from RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY'),
  h('RUNTIME_SUBDIRECTORY', 'see RUNTIME_ROOT'),
  h('RUNTIME_APPDIRECTORY', 'see RUNTIME_ROOT (default config)'),
  na('RUNTIME_IGNOREDOTFILES', 'dot files are always skipped (a ConfigMap mount keeps old copies in ..data folders)'),
  h(
    'RUNTIME_WATCH_ROOT',
    'both ways reload: the rules directory is watched, and so is a swap of the RUNTIME_ROOT symlink (after which the new target is watched)',
  ),
  na('EXPIRATION_JITTER_MAX_SECONDS', 'each Redis key expires with its own window; no jitter is needed'),
  h(
    'LOCAL_CACHE_SIZE_IN_BYTES',
    '0 (default): no local cache; else over-limit keys are answered in-process, about 128 bytes a key (512 KiB at least, as freecache); hits in sluice_local_cache_hits_total',
  ),
  h(
    'NEAR_LIMIT_RATIO',
    'an allowed decision past floor(limit × ratio) used counts as outcome="near_limit" (default 0.8)',
  ),
  h('CACHE_KEY_PREFIX', 'prefix of every Redis key (sluice’s default is sluice:)'),
  h('BACKEND_TYPE', 'redis; memcache is refused'),
  na(
    'STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT',
    'always on: a rejected request consumes nothing, on any store (a deliberate difference)',
  ),
  h('LIMIT_RESPONSE_HEADERS_ENABLED', 'without it, no rate-limit headers are added to responses (as envoy)'),
  h('LIMIT_LIMIT_HEADER', 'name of the limit header (default RateLimit-Limit)'),
  h('LIMIT_REMAINING_HEADER', 'name of the remaining header (default RateLimit-Remaining)'),
  h('LIMIT_RESET_HEADER', 'name of the reset header (default RateLimit-Reset)'),
  h('HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED', 'health (HTTP and gRPC) is NOT_SERVING until a domain is loaded'),
  h('REDIS_SOCKET_TYPE', 'tcp or unix'),
  h('REDIS_TYPE', 'single, cluster or sentinel'),
  h('REDIS_URL', 'host:port (or a socket path); cluster: host:port,host:port,...; sentinel: master name,host:port,...'),
  na('REDIS_POOL_SIZE', 'one pipelined connection per node serves every request'),
  h('REDIS_AUTH', 'password, or user:password'),
  h('REDIS_TLS', 'TLS to Redis (to the Sentinels and the master with REDIS_TYPE=sentinel)'),
  h(
    'REDIS_TLS_CLIENT_CERT',
    'client certificate (PEM) for Redis TLS, with REDIS_TLS_CLIENT_KEY; shared by the per-second Redis',
  ),
  h('REDIS_TLS_CLIENT_KEY', 'its private key (PEM); one without the other stops the start'),
  h('REDIS_TLS_CACERT', 'CAs (PEM) trusted for Redis’s certificate, besides the system’s'),
  h('REDIS_TLS_SKIP_HOSTNAME_VERIFICATION', 'the chain is still verified, not the name in the certificate'),
  na('REDIS_PIPELINE_WINDOW', 'commands of one tick are pipelined automatically'),
  na('REDIS_PIPELINE_LIMIT', 'deprecated upstream too'),
  na('REDIS_CLUSTER_PIPELINE_PARALLELISM', 'the cluster client sends to every node in parallel'),
  h('REDIS_PERSECOND', 'limits whose unit is second are counted in a second Redis (REDIS_PERSECOND_URL, ...)'),
  h('REDIS_PERSECOND_SOCKET_TYPE', PER_SECOND),
  h('REDIS_PERSECOND_TYPE', PER_SECOND),
  h('REDIS_PERSECOND_URL', `${PER_SECOND}; needed with REDIS_PERSECOND=true`),
  na('REDIS_PERSECOND_POOL_SIZE', 'as REDIS_POOL_SIZE'),
  h('REDIS_PERSECOND_AUTH', PER_SECOND),
  h('REDIS_PERSECOND_TLS', `${PER_SECOND} (with the REDIS_TLS_ files)`),
  h('REDIS_SENTINEL_AUTH', 'password (or user:password) of the Sentinels; REDIS_AUTH is the master’s'),
  h('REDIS_PERSECOND_SENTINEL_AUTH', PER_SECOND),
  na('REDIS_PERSECOND_PIPELINE_WINDOW', 'as REDIS_PIPELINE_WINDOW'),
  na('REDIS_PERSECOND_PIPELINE_LIMIT', 'as REDIS_PIPELINE_LIMIT'),
  na('REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM', 'as REDIS_CLUSTER_PIPELINE_PARALLELISM'),
  na(
    'REDIS_HEALTH_CHECK_ACTIVE_CONNECTION',
    'health always follows Redis under fail-closed (the default), and never under fail-open',
  ),
  h('REDIS_TIMEOUT', 'longest wait for Redis per decision (sluice’s default is 50ms, not 10s)'),
  h('REDIS_PERSECOND_TIMEOUT', PER_SECOND),
  na('REDIS_POOL_ON_EMPTY_BEHAVIOR', 'there is no pool (see REDIS_POOL_SIZE)'),
  na('REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR', 'as REDIS_POOL_ON_EMPTY_BEHAVIOR'),
  na('REDIS_STARTUP_INITIAL_INTERVAL', 'sluice starts without waiting for Redis and reconnects for ever'),
  na('REDIS_STARTUP_MAX_INTERVAL', 'as REDIS_STARTUP_INITIAL_INTERVAL'),
  na('REDIS_STARTUP_MAX_ELAPSED_TIME', 'as REDIS_STARTUP_INITIAL_INTERVAL'),
  na('MEMCACHE_HOST_PORT', MEMCACHE),
  na('MEMCACHE_MAX_IDLE_CONNS', MEMCACHE),
  na('MEMCACHE_SRV', MEMCACHE),
  na('MEMCACHE_SRV_REFRESH', MEMCACHE),
  na('MEMCACHE_TLS', MEMCACHE),
  na('MEMCACHE_TLS_CLIENT_CERT', MEMCACHE),
  na('MEMCACHE_TLS_CLIENT_KEY', MEMCACHE),
  na('MEMCACHE_TLS_CACERT', MEMCACHE),
  na('MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION', MEMCACHE),
  h('SHADOW_MODE', 'global shadow: statuses stay OVER_LIMIT, only overall_code turns OK (as envoy)'),
  h('QUOTA_MODE', 'every descriptor in quota mode: OVER_LIMIT only when all of them are over'),
  h(
    'RESPONSE_DYNAMIC_METADATA',
    'dynamic_metadata with the domain, descriptors, hits and the metadata of passed rules',
  ),
  h('MERGE_DOMAIN_CONFIG', 'files of one domain are merged instead of refused'),
  h(
    'TRACING_ENABLED',
    'a server span per decision (gRPC and /json), continuing the caller’s traceparent or B3 trace, exported over OTLP to OTEL_EXPORTER_OTLP_ENDPOINT',
  ),
  h('TRACING_SERVICE_NAME', 'resource attribute service.name (default RateLimit)'),
  h('TRACING_SERVICE_NAMESPACE', 'resource attribute service.namespace'),
  h('TRACING_SERVICE_INSTANCE_ID', 'resource attribute service.instance.id (default a random UUID)'),
  h('TRACING_EXPORTER_PROTOCOL', 'http (OTLP/HTTP with JSON bodies, default) or grpc (OTLP/gRPC)'),
  h('TRACING_SAMPLING_RATE', 'share of new traces recorded (default 1); a caller’s sampled flag wins, as ParentBased'),
];
