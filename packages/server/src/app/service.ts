import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock, Store } from 'sluice';
import { createMemoryStore, type MemoryStoreOptions, SluiceError, systemClock } from 'sluice';
import { createClientIpResolver } from 'sluice/http';
import type { FailMode, LoadResult, RuleSet, RulesEngine } from 'sluice/rules';
import { createRulesEngine, parseRules, RULE_ISSUE_CODES } from 'sluice/rules';
import {
  createMultiRegionBackend,
  type MultiRegionOptions,
  type RegionsView,
} from '../backends/multi-region-backend.js';
import { createPerSecondStore } from '../backends/per-second-store.js';
import { createRedisBackend, type RedisOptions, type StoreBackend } from '../backends/redis-backend.js';
import type { ConfigSource, ConfigStatus } from '../config/config-source.js';
import { createConfigSource, formatIssues, loadConfig } from '../config/config-source.js';
import { createXdsConfigSource } from '../config/xds/xds-config-source.js';
import type { XdsOptions } from '../config/xds/xds-options.js';
import type { AccessLists } from '../core/access-lists.js';
import { createAccessLists } from '../core/access-lists.js';
import { createDecider, type HeaderMode } from '../core/decide.js';
import type { DecisionHub } from '../observability/decision-events.js';
import { createDecisionHub } from '../observability/decision-events.js';
import { registerDescriptorSeries } from '../observability/descriptor-series.js';
import type { Logger, LogLevel } from '../observability/logger.js';
import { createLogger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import { createDisabledMetrics, createMetrics } from '../observability/metrics.js';
import { applyConstantLabels } from '../observability/stats/constant-labels.js';
import { createStatsCollector } from '../observability/stats/stats-collector.js';
import { createOtlpExporter } from '../observability/tracing/otlp-exporter.js';
import { createTracer } from '../observability/tracing/tracer.js';
import type { TracingOptions } from '../observability/tracing/tracing-options.js';
import { createTrustCheck } from '../protocols/gateway/forwarding.js';
import { createGateway, type GatewayLimits } from '../protocols/gateway/gateway.js';
import type { KeepaliveOptions } from '../protocols/grpc/connection-age.js';
import { type GrpcHandle, startGrpcServer } from '../protocols/grpc/grpc-server.js';
import { startH2GrpcServer } from '../protocols/grpc/h2-server.js';
import { grpcHealthCheck } from '../protocols/grpc/health-service.js';
import { createHealthWatch, type HealthWatchOptions } from '../protocols/grpc/health-watch.js';
import type { ReceiveLimits } from '../protocols/grpc/receive-guard.js';
import { type GrpcTlsOptions, readTlsMaterial, watchTlsFiles } from '../protocols/grpc/tls.js';
import { freeSocketPath } from '../protocols/grpc/unix-socket.js';
import { createAdminAuth } from '../protocols/http/admin-auth.js';
import { checkAdmin, createAdminRoutes } from '../protocols/http/admin-routes.js';
import { createApiServer, type RouteHandler } from '../protocols/http/api-server.js';
import { createCheckApi } from '../protocols/http/check-api.js';
import { createDashboardRoutes } from '../protocols/http/dashboard-routes.js';
import { createDrain, type Drain } from '../protocols/http/drain.js';
import { DEFAULT_MAX_BODY_BYTES, sendJson } from '../protocols/http/respond.js';
import { createStaticHandler, DASHBOARD_DIR } from '../protocols/http/static-files.js';
import { createAdminActions } from './admin-actions.js';
import { createHealth } from './health.js';
import { traceDecisions } from './traced-decider.js';

/** Options of {@link startService}. Every port may be 0 (any free port; read the bound one from the handle). */
export interface ServiceOptions {
  /** Rule files or directories. None: the built-in example (`EXAMPLE_CONFIG`). */
  config?: string | readonly string[];
  /** A store to use as is (the caller closes it). Exclusive with `redis`. @default a memory store */
  store?: Store;
  /** Build a Redis store: `{ url }` for one server, `{ cluster: ['host:port', ...] }` for a Cluster. */
  redis?: RedisOptions;
  /**
   * A second Redis for the limits whose period is one second (envoy's REDIS_PERSECOND); the others stay
   * in `redis`. Needs `redis`.
   */
  redisPerSecond?: RedisOptions;
  /** Run in one region of several (docs/multi-region.md): a multi-region store. Exclusive with `store` and `redis`. */
  multiRegion?: MultiRegionOptions;
  /** Gateway mode: reverse-proxy every request to this URL after applying the config's `http:` rules. */
  upstream?: string;
  /** Interface to listen on. @default '0.0.0.0' */
  host?: string;
  /** HTTP API port. @default 8080 */
  port?: number;
  /** gRPC port. @default 8081 */
  grpcPort?: number;
  /** Gateway port (with `upstream` only). @default 8000 */
  proxyPort?: number;
  /**
   * Which gRPC server answers: @grpc/grpc-js (`grpc-js`), or sluice's lean RLS server for this one
   * unary method on Node's HTTP/2 (`h2`: about 1.4× the decisions per CPU second, see docs/service.md).
   * Both speak the same wire protocol. @default 'grpc-js'
   */
  grpcServer?: 'h2' | 'grpc-js';
  /**
   * Bounds on the request messages the gRPC server holds before they are complete: largest message, bytes
   * per connection and in total, and how long a message may take to arrive. @default DEFAULT_RECEIVE_LIMITS
   */
  grpcLimits?: Partial<ReceiveLimits>;
  /** Most concurrent streams per gRPC connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). @default 4096 */
  grpcMaxStreams?: number;
  /**
   * Most open `grpc.health.v1.Health/Watch` calls in all, per connection and per client address (so one
   * client cannot take the slots others' health checking needs). @default 1000, 16, 64
   */
  grpcWatchLimits?: Pick<HealthWatchOptions, 'maxWatches' | 'maxWatchesPerConnection' | 'maxWatchesPerClient'>;
  /** Token of the admin API; admin is off without one. */
  adminToken?: string;
  /** What to do when the store fails, for rules that do not say. @default the store's error: UNAVAILABLE / 503 */
  fail?: FailMode;
  /**
   * With `fail: 'insurance'`: the share of each limit this process enforces on its own while the store
   * is down (e.g. 0.25 when four processes share the limit). @default 1
   */
  insuranceShare?: number;
  /** Sizes the memory store the service creates (without `store` or `redis`), e.g. `{ maxKeys }`. */
  memory?: MemoryStoreOptions;
  /** Put every rule in shadow mode (count and report, never reject). @default false */
  shadow?: boolean;
  /**
   * `/v1/check` accepts a caller's `nowMs`, for tests that drive time through `sluice/remote`
   * (`clock: 'client'`). Never in production: a caller could move its counters in time. @default false
   */
  clientClock?: boolean;
  /** Gateway: proxies whose `X-Forwarded-For` is believed (CIDRs, addresses, `loopback`, ...). @default none */
  trustProxy?: string | readonly string[];
  /** Gateway: IPv6 clients count under their network of this prefix length (one subscriber's /56). @default 56 */
  ipv6Subnet?: number;
  /** Gateway: timeouts and in-flight caps. @default DEFAULT_GATEWAY_LIMITS */
  gatewayLimits?: Partial<GatewayLimits>;
  /** Watch the config files and reload on change. @default true */
  watch?: boolean;
  /** Largest API request body. @default 1 MiB */
  maxBodyBytes?: number;
  /** How long shutdown waits for in-flight requests before cutting them. @default 10_000 */
  shutdownGraceMs?: number;
  /** @default a pino logger on stdout at `logLevel` */
  logger?: Logger;
  /** @default 'info' */
  logLevel?: LogLevel;
  /** Extra HTTP routes by exact path (e.g. the dashboard's `/api/...`). */
  routes?: Readonly<Record<string, RouteHandler>>;
  /** Where the dashboard's static files are; false serves none. @default the package's `dashboard/` */
  dashboardDir?: string | false;
  /** @default the system clock */
  clock?: Clock;
  /** Interface of the gRPC server. @default `host` */
  grpcHost?: string;
  /** gRPC over TLS, mutual TLS with `clientCaFile`; the files are reloaded when they change. @default plaintext */
  grpcTls?: GrpcTlsOptions;
  /** gRPC: GOAWAY connections older than this, ±10% (envoy's GRPC_MAX_CONNECTION_AGE). @default none */
  grpcMaxConnectionAgeMs?: number;
  /** gRPC: cut connections this long after their age's GOAWAY. @default none: when their calls end */
  grpcMaxConnectionAgeGraceMs?: number;
  /**
   * gRPC listens on this unix socket instead of `grpcHost:grpcPort` (envoy's GRPC_UDS). A socket file left
   * by a dead process is replaced; a live one stops the start.
   */
  grpcSocket?: string;
  /** gRPC keepalive pings; a connection that does not answer is cut. @default every 2 h, 20 s to answer (grpc-go's) */
  grpcKeepalive?: KeepaliveOptions;
  /** Merge config files of one domain instead of refusing them (envoy's MERGE_DOMAIN_CONFIG). @default false */
  mergeDomains?: boolean;
  /** A directory whose symlink swap means "reload the config" (envoy's RUNTIME_ROOT). */
  configRoot?: string;
  /** Every descriptor in quota mode (envoy's QUOTA_MODE). @default false */
  quotaMode?: boolean;
  /** Rate-limit headers on responses: sluice's, none, or envoy's three (`LIMIT_RESPONSE_HEADERS_ENABLED`). @default 'sluice' */
  rateLimitHeaders?: HeaderMode;
  /** Add envoy ratelimit's `dynamic_metadata` to responses (RESPONSE_DYNAMIC_METADATA). @default false */
  dynamicMetadata?: boolean;
  /** Health is 503 / NOT_SERVING while no domain is loaded (HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED). @default false */
  healthNeedsConfig?: boolean;
  /** Also serve the Prometheus metrics on a listener of their own (envoy's USE_PROMETHEUS, PROMETHEUS_ADDR). */
  metricsListener?: { host: string; port: number; path: string };
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
  /** Extra constant labels on every Prometheus series (envoy's EXTRA_TAGS). */
  metricsLabels?: Readonly<Record<string, string>>;
  /** Collect no metrics: /metrics and the metrics listener answer an empty exposition (envoy's DISABLE_STATS). @default false */
  disableStats?: boolean;
  /** OpenTelemetry tracing of decisions, exported over OTLP (envoy's TRACING_*). @default off */
  tracing?: TracingOptions;
  /** Start with no rules when the config paths hold no rule file yet (envoy ratelimit does). @default false */
  startWithoutConfig?: boolean;
  /** Take the rules from an xDS management server instead of files (envoy's CONFIG_TYPE=GRPC_XDS_SOTW). */
  xds?: XdsOptions;
}

/** A running service. */
export interface ServiceHandle {
  /** The HTTP API's bound port. */
  readonly httpPort: number;
  /** The gRPC server's bound port (0 with `grpcSocket`). */
  readonly grpcPort: number;
  /** The gRPC server's unix socket, with `grpcSocket`. */
  readonly grpcSocket?: string;
  /** The gateway's bound port, in gateway mode. */
  readonly proxyPort?: number;
  readonly engine: RulesEngine;
  readonly store: Store;
  readonly lists: AccessLists;
  /** Every decision, for stats collectors (the dashboard). */
  readonly hub: DecisionHub;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** Where the rules come from and how the last load went. */
  readonly config: ConfigStatus;
  /** Reloads the config now (as `POST /admin/reload` does). */
  reload: ConfigSource['reload'];
  /**
   * Stops: refuses new connections, lets in-flight requests finish (up to `shutdownGraceMs`), stops
   * watching, closes the store. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Starts the sluice service: the Envoy RLS v3 gRPC API, the HTTP API (`/json`, `/v1/check`,
 * `/healthcheck`, `/metrics`, `/admin`, the dashboard) and, with `upstream`, the gateway.
 *
 * @example
 * import { startService } from 'sluice-server';
 * const service = await startService({ config: './rules', port: 0, grpcPort: 0, host: '127.0.0.1' });
 * console.log(service.httpPort, service.grpcPort);
 * await service.close();
 */
export async function startService(options: ServiceOptions = {}): Promise<ServiceHandle> {
  if (options.store !== undefined && options.redis !== undefined) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'store and redis: give one or the other', { option: 'redis' });
  }
  if (options.redisPerSecond !== undefined && options.redis === undefined) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'redisPerSecond: needs redis (the Redis of the other limits)', {
      option: 'redisPerSecond',
    });
  }
  if (options.memory !== undefined && (options.store !== undefined || options.redis !== undefined)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      'memory: sizes the memory store the service creates; with store or redis there is none',
      { option: 'memory' },
    );
  }
  const logger = options.logger ?? createLogger(options.logLevel ?? 'info');
  const clock = options.clock ?? systemClock;
  const host = options.host ?? '0.0.0.0';
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const graceMs = options.shutdownGraceMs ?? 10_000;
  // A short admin token is refused here, before any port or store is opened.
  const adminAuth = createAdminAuth(options.adminToken);
  const paths =
    options.config === undefined ? [] : typeof options.config === 'string' ? [options.config] : [...options.config];
  const upstream = options.upstream === undefined ? undefined : parseUpstream(options.upstream);
  const resolver = createClientIpResolver({
    ...(options.trustProxy === undefined ? {} : { trustProxy: options.trustProxy }),
    ipv6Subnet: options.ipv6Subnet ?? 56,
  });
  const trustsPeer = createTrustCheck(options.trustProxy);

  const mergeDomains = options.mergeDomains === true;
  // At start, on this thread (nothing is served yet); reloads parse off-thread (config-source).
  const xds = options.xds;
  if (xds !== undefined && paths.length > 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'xds: give config files or an xDS server, not both', {
      option: 'xds',
    });
  }
  // xDS: the rules arrive once the stream is open; until then no domain is known.
  const loaded: LoadResult =
    xds !== undefined
      ? { ok: true, ruleSet: { domains: new Map(), files: [] }, files: [] }
      : await loadConfig(paths, (sources) => parseRules(sources, { mergeDomains }));
  // envoy ratelimit starts with an empty config directory (every domain unknown) and picks files up later.
  const first =
    !loaded.ok && options.startWithoutConfig === true && loaded.issues.every((i) => i.code === RULE_ISSUE_CODES.noFiles)
      ? { ok: true as const, ruleSet: { domains: new Map(), files: [] }, files: [] }
      : loaded;
  // TLS files are checked before anything listens: a bad certificate stops the start, with the file named.
  const tlsMaterial = options.grpcTls === undefined ? undefined : readTlsMaterial(options.grpcTls);
  if (!first.ok) {
    throw new SluiceError(
      'ERR_SLUICE_CONFIG_INVALID',
      `the config has ${first.issues.length} problem(s):\n${formatIssues(first.issues)}`,
    );
  }

  if (options.multiRegion !== undefined && (options.store !== undefined || options.redis !== undefined)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'multiRegion: give it instead of store and redis', {
      option: 'multiRegion',
    });
  }
  let regions: (() => RegionsView) | undefined;
  let backend: StoreBackend;
  if (options.multiRegion !== undefined) {
    const multi = await createMultiRegionBackend(options.multiRegion, logger);
    regions = multi.regions;
    backend = multi;
  } else if (options.redis !== undefined) {
    // With two Redis, every log line of one says which.
    const two = options.redisPerSecond !== undefined;
    backend = await createRedisBackend(options.redis, two ? logger.child({ redis: 'main' }) : logger);
    if (options.redisPerSecond !== undefined) backend = await withPerSecond(backend, options.redisPerSecond, logger);
  } else {
    backend = {
      store: options.store ?? createMemoryStore(options.memory),
      close: async () => {},
      owned: options.store === undefined,
    };
  }
  const { store } = backend;
  const hub = createDecisionHub();
  const metrics =
    options.disableStats === true
      ? createDisabledMetrics()
      : createMetrics({ hub, storeName: store.name, storeStats: () => storeStats(store) });
  const stopDescriptorSeries =
    options.disableStats === true
      ? () => {}
      : registerDescriptorSeries(metrics.registry, hub, {
          ...(options.maxDescriptorSeries === undefined ? {} : { maxSeries: options.maxDescriptorSeries }),
        });
  let engine: RulesEngine;
  try {
    if (options.metricsLabels !== undefined) applyConstantLabels(metrics.registry, options.metricsLabels);
    engine = createRulesEngine({
      ruleSet: first.ruleSet,
      store,
      clock,
      ...(options.fail === undefined ? {} : { fail: options.fail }),
      ...(options.shadow === undefined ? {} : { shadow: options.shadow }),
      ...(options.insuranceShare === undefined ? {} : { insuranceShare: options.insuranceShare }),
      ...(options.quotaMode === undefined ? {} : { quota: options.quotaMode }),
    });
  } catch (error) {
    // A bad option must not leave a Redis connection holding the process open.
    if (backend.owned) await store.close();
    await backend.close();
    throw error;
  }
  const lists = createAccessLists();
  const reportLoad = (result: LoadResult) => {
    metrics.reload(result.ok ? 'ok' : 'failed');
    if (result.ok) logger.info({ files: result.files, domains: [...result.ruleSet.domains.keys()] }, 'config loaded');
    else logger.warn({ issues: result.issues }, 'config reload failed; keeping the last good rules');
  };
  const applyRules = (ruleSet: RuleSet) => engine.setRuleSet(ruleSet);
  const xdsSource =
    xds === undefined ? undefined : createXdsConfigSource(xds, applyRules, reportLoad, logger, mergeDomains);
  const config: ConfigSource =
    xdsSource ??
    createConfigSource(paths, first, applyRules, reportLoad, {
      mergeDomains,
      ...(options.configRoot === undefined ? {} : { root: options.configRoot }),
    });
  const now = () => clock.now();
  const spanExporter =
    options.tracing === undefined ? undefined : createOtlpExporter({ ...options.tracing.otlp, logger });
  const tracer =
    options.tracing === undefined || spanExporter === undefined
      ? undefined
      : createTracer({ ...options.tracing, exporter: spanExporter, logger });
  const decided = createDecider({
    engine,
    lists,
    hub,
    metrics,
    now,
    ...(options.rateLimitHeaders === undefined ? {} : { headers: options.rateLimitHeaders }),
    ...(options.dynamicMetadata === true ? { dynamicMetadata: true } : {}),
    ...(options.nearLimitRatio === undefined ? {} : { nearLimitRatio: options.nearLimitRatio }),
  });
  const decider = tracer === undefined ? decided : traceDecisions(decided, tracer);
  const checkApi = createCheckApi({
    store,
    lists,
    hub,
    metrics,
    now,
    ...(options.fail === undefined ? {} : { fail: options.fail }),
    ...(options.clientClock === true ? { clientClock: true } : {}),
    ...(options.nearLimitRatio === undefined ? {} : { nearLimitRatio: options.nearLimitRatio }),
  });
  let draining = false;
  // Not ready until the xDS management server sent a first config (FORCE_START_WITHOUT_INITIAL_CONFIG=true: ready at once).
  const awaitsXds = xdsSource !== undefined && xds?.forceStart !== true;
  const health = createHealth({
    storeName: store.name,
    ...(backend.ping === undefined ? {} : { ping: backend.ping }),
    failClosed: options.fail === undefined || options.fail === 'closed',
    ...(store.isReady === undefined ? {} : { ready: () => store.isReady !== false }),
    draining: () => draining,
    ...(options.healthNeedsConfig === true || awaitsXds
      ? {
          configLoaded: () =>
            (!awaitsXds || xdsSource?.hasConfig === true) &&
            (options.healthNeedsConfig !== true || engine.ruleSet.domains.size > 0),
        }
      : {}),
  });
  // The dashboard's stats: per-rule decisions per second and the keys nearest their limits, bounded.
  const stats = createStatsCollector({ hub, now });
  const routes = new Map<string, RouteHandler>(
    Object.entries(
      createDashboardRoutes({
        stats,
        rules: () => engine.describeRules(),
        config: () => config.status,
        health,
        lists,
        storeName: store.name,
        registry: metrics.registry,
        ...(regions === undefined ? {} : { regions }),
        adminEnabled: options.adminToken !== undefined && options.adminToken !== '',
        // Raw keys only with the admin token; a wrong one is refused (and counts towards the backoff).
        keyAccess: (req) => (checkAdmin(adminAuth, req, now, true) === 'ok' ? 'raw' : 'masked'),
        now,
      }),
    ),
  );
  for (const [path, handler] of Object.entries(options.routes ?? {})) routes.set(path, handler);
  routes.set('/api/rules', (_req, res) => sendJson(res, 200, { config: config.status, rules: engine.describeRules() }));
  routes.set('/api/status', async (_req, res) => {
    const h = await health();
    sendJson(res, 200, {
      health: h.body,
      config: config.status,
      lists: { allow: lists.list('allow').length, deny: lists.list('deny').length },
      uptimeS: Math.round(process.uptime()),
    });
  });
  const dashboardDir = options.dashboardDir === undefined ? DASHBOARD_DIR : options.dashboardDir;
  const api = createApiServer({
    decider,
    checkApi,
    metrics,
    logger,
    maxBodyBytes,
    health,
    admin: createAdminRoutes({
      auth: adminAuth,
      now,
      lists,
      actions: createAdminActions({ engine, store, clock, config }),
      maxBodyBytes,
    }),
    routes,
    ...(dashboardDir === false ? {} : { staticFiles: createStaticHandler(dashboardDir) }),
  });
  const gateway =
    upstream === undefined
      ? undefined
      : createGateway({
          upstream,
          engine,
          decider,
          lists,
          metrics,
          logger,
          // A module-level header reader: no closure made per gateway request.
          clientIp: (req) => resolver.clientIp(req.socket.remoteAddress, req, requestHeader),
          // The network address an IPv6 client counts under (its /56), without the prefix length.
          clientKey: (ip) => {
            const key = resolver.ipKey(ip);
            // The regex only for keys with a prefix length (IPv6): this runs for every gateway request.
            return key.includes('/') ? key.replace(/\/\d+$/, '') : key;
          },
          trustsPeer: (req) => trustsPeer(req.socket.remoteAddress ?? ''),
          ...(options.gatewayLimits === undefined ? {} : { limits: options.gatewayLimits }),
        });

  if (awaitsXds) {
    // Listening at once, not ready (503) until the first config: awaiting it here, with nothing listening,
    // left Node nothing to wait on while the management server was unreachable, and it exited 0.
    logger.info({ server: xds?.server }, 'not ready until the first config arrives from the xDS management server');
  }
  const started: { close(): Promise<void> }[] = [];
  try {
    const httpPort = await listen(api, options.port ?? 8080, host);
    const apiDrain = createDrain(api);
    started.push({ close: () => closeServer(api, graceMs, apiDrain) });
    const grpcHealth = grpcHealthCheck(async () => (await health()).status === 200);
    // Watch streams the status; at shutdown they get NOT_SERVING and end, so they never hold the drain.
    const healthWatch = createHealthWatch({ ...options.grpcWatchLimits, check: grpcHealth });
    started.push({ close: async () => healthWatch.close() });
    if (options.grpcSocket !== undefined) await freeSocketPath(options.grpcSocket);
    const grpcOptions = {
      host: options.grpcHost ?? host,
      port: options.grpcPort ?? 8081,
      ...(options.grpcSocket === undefined ? {} : { socket: options.grpcSocket }),
      ...(options.grpcKeepalive === undefined ? {} : { keepalive: options.grpcKeepalive }),
      decider,
      metrics,
      logger,
      ...(options.grpcLimits === undefined ? {} : { limits: options.grpcLimits }),
      ...(options.grpcMaxStreams === undefined ? {} : { maxConcurrentStreams: options.grpcMaxStreams }),
      health: grpcHealth,
      healthWatch,
      ...(tlsMaterial === undefined
        ? {}
        : {
            tls: {
              material: tlsMaterial,
              ...(options.grpcTls?.clientSan === undefined ? {} : { clientSan: options.grpcTls.clientSan }),
            },
          }),
      ...(options.grpcMaxConnectionAgeMs === undefined ? {} : { maxConnectionAgeMs: options.grpcMaxConnectionAgeMs }),
      ...(options.grpcMaxConnectionAgeGraceMs === undefined
        ? {}
        : { maxConnectionAgeGraceMs: options.grpcMaxConnectionAgeGraceMs }),
    };
    const grpc: GrpcHandle =
      options.grpcServer === 'h2' ? await startH2GrpcServer(grpcOptions) : await startGrpcServer(grpcOptions);
    started.push({ close: () => grpc.close(graceMs) });
    if (options.grpcTls !== undefined && tlsMaterial !== undefined) {
      const stop = watchTlsFiles(
        options.grpcTls,
        tlsMaterial,
        (material) => {
          grpc.updateTls?.(material);
          logger.info({ cert: options.grpcTls?.certFile }, 'gRPC TLS certificates reloaded');
        },
        // An error, not a warning: the files on disk (e.g. an expired certificate) will stop the next start.
        (error) =>
          logger.error(
            { err: error.message, code: (error as { code?: string }).code },
            'gRPC TLS files not reloaded; keeping the last good ones',
          ),
      );
      started.push({ close: async () => stop() });
    }
    if (options.metricsListener !== undefined) {
      const m = options.metricsListener;
      const server = createMetricsServer(metrics, m.path);
      await listen(server, m.port, m.host);
      const metricsDrain = createDrain(server);
      started.push({ close: () => closeServer(server, graceMs, metricsDrain) });
    }
    const proxyPort = gateway === undefined ? undefined : await listen(gateway, options.proxyPort ?? 8000, host);
    if (gateway !== undefined) {
      const gatewayDrain = createDrain(gateway);
      started.push({ close: () => closeServer(gateway, graceMs, gatewayDrain) });
    }
    const stopWatching = options.watch === false ? () => {} : config.watch();

    let closing: Promise<void> | undefined;
    const handle: ServiceHandle = {
      httpPort,
      grpcPort: grpc.port,
      ...(options.grpcSocket === undefined ? {} : { grpcSocket: options.grpcSocket }),
      ...(proxyPort === undefined ? {} : { proxyPort }),
      engine,
      store,
      lists,
      hub,
      metrics,
      logger,
      get config() {
        return config.status;
      },
      reload: () => config.reload(),
      close() {
        closing ??= (async () => {
          draining = true;
          stopWatching();
          stopDescriptorSeries();
          stats.close();
          await Promise.all(started.map((s) => s.close()));
          if (backend.owned) await store.close();
          await backend.close();
          await tracer?.shutdown();
          spanExporter?.close();
          logger.info('stopped');
        })();
        return closing;
      },
    };
    logger.info(
      {
        http: httpPort,
        grpc: options.grpcSocket ?? grpc.port,
        ...(proxyPort === undefined ? {} : { proxy: proxyPort, upstream: upstream?.origin }),
        host,
        store: store.name,
        config:
          config.status.source === 'example'
            ? 'built-in example'
            : config.status.source === 'xds'
              ? `xds ${xds?.server}`
              : config.status.files,
        admin: options.adminToken ? 'on' : 'off',
      },
      'listening',
    );
    if (options.clientClock === true) {
      logger.warn(
        "--client-clock: /v1/check decides at the caller's nowMs, so a caller can move its counters in time; for tests only",
      );
    }
    return handle;
  } catch (error) {
    await Promise.all(started.map((s) => s.close()));
    if (backend.owned) await store.close();
    await backend.close();
    throw error;
  }
}

/** The main Redis backend joined by a per-second one: per-second limits go to the second (envoy's REDIS_PERSECOND). */
async function withPerSecond(main: StoreBackend, options: RedisOptions, logger: Logger): Promise<StoreBackend> {
  let second: StoreBackend;
  try {
    second = await createRedisBackend(options, logger.child({ redis: 'per-second' }));
  } catch (error) {
    await main.store.close();
    await main.close();
    throw error;
  }
  const pings = [main.ping, second.ping].filter((p) => p !== undefined);
  return {
    store: createPerSecondStore(main.store, second.store),
    owned: true,
    // Health follows both: a decision may need either.
    ping: () => Promise.all(pings.map((p) => p())),
    close: async () => {
      await Promise.all([main.close(), second.close()]);
    },
  };
}

/** A listener that answers the Prometheus text on `path` and 404 elsewhere. */
function createMetricsServer(metrics: ServiceMetrics, path: string): Server {
  return createServer((req, res) => {
    if (req.method !== 'GET' || new URL(req.url ?? '/', 'http://x').pathname !== path) {
      res.writeHead(404).end();
      return;
    }
    metrics.render().then(
      (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
}

function headerOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** A request header as one string (repeated fields joined), for the client address resolver. */
function requestHeader(req: IncomingMessage, name: string): string | undefined {
  return headerOf(req.headers[name]);
}

function storeStats(store: Store): Readonly<Record<string, number>> | undefined {
  const stats = (store as Store & { stats?: () => unknown }).stats;
  if (typeof stats !== 'function') return undefined;
  const value = stats.call(store);
  return typeof value === 'object' && value !== null ? (value as Record<string, number>) : undefined;
}

function parseUpstream(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `upstream: '${text}' is not a URL (e.g. http://127.0.0.1:3000)`,
      {
        option: 'upstream',
      },
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `upstream: use an http:// or https:// URL, not ${url.protocol}`,
      {
        option: 'upstream',
      },
    );
  }
  return url;
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/**
 * Stops accepting, lets in-flight requests finish, then closes. Idle keep-alive connections are closed
 * as they become idle (a client holding one open must not delay the exit); after `graceMs` whatever is
 * left is cut.
 */
function closeServer(server: Server, graceMs: number, drain: Drain): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    // Answers from now on say `Connection: close`, so keep-alive clients do not reuse a closing connection.
    drain.start();
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const cut = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(cut);
      resolve();
    });
    server.closeIdleConnections();
  });
}
