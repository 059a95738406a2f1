/**
 * `startService`, the composition root: builds the parts (store, rules, decisions, telemetry), wires them
 * into the listeners (HTTP API, gRPC, gateway, metrics), listens, and returns the running service's handle.
 */
import type { Store } from 'sluice';
import { systemClock } from 'sluice';
import type { RulesEngine } from 'sluice/rules';
import type { ConfigSource, ConfigStatus } from '../config/config-source.js';
import type { AccessLists } from '../core/access-lists.js';
import { createAccessLists } from '../core/access-lists.js';
import { createDecider, type Decider } from '../core/decide.js';
import { registerAdaptiveMetrics } from '../observability/adaptive-metrics.js';
import type { DecisionHub } from '../observability/decision-events.js';
import { createDecisionHub } from '../observability/decision-events.js';
import type { Logger } from '../observability/logger.js';
import { createLogger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import { createStatsCollector } from '../observability/stats/stats-collector.js';
import { readTlsMaterial } from '../protocols/grpc/tls.js';
import { createAdminAuth } from '../protocols/http/admin-auth.js';
import { withEnvoyStats } from './envoy-stats-decider.js';
import { createHealth } from './health.js';
import { createMetricsServer, type Listening, listenDrained } from './listeners.js';
import { type ServiceCapture, startServiceCapture } from './service-capture.js';
import { createServiceGateway } from './service-gateway.js';
import { startServiceGrpc } from './service-grpc.js';
import { createServiceHttp } from './service-http.js';
import { createServiceTelemetry, type ServiceTelemetry } from './service-observability.js';
import { checkServiceOptions, type ServiceOptions } from './service-options.js';
import { createRulesFeed, createServiceEngine, loadFirstRules, type RulesFeed } from './service-rules.js';
import { openServiceStore, type ServiceStore } from './service-store.js';
import { traceDecisions } from './traced-decider.js';

export type { ServiceOptions } from './service-options.js';

/** A running service. */
export interface ServiceHandle {
  /** The HTTP API's bound port. */
  readonly httpPort: number;
  /** The gRPC server's bound port (0 with `grpc.socket`). */
  readonly grpcPort: number;
  /** The gRPC server's unix socket, with `grpc.socket`. */
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

/** The parts every listener shares, built before anything listens. */
interface Core {
  readonly backend: ServiceStore;
  readonly telemetry: ServiceTelemetry;
  readonly engine: RulesEngine;
  readonly feed: RulesFeed;
  readonly decider: Decider;
  readonly lists: AccessLists;
  readonly hub: DecisionHub;
  readonly logger: Logger;
  /** `--capture`: its writer, closed at shutdown. */
  readonly capture?: ServiceCapture;
}

/**
 * Starts the sluice service: the Envoy RLS v3 gRPC API, the HTTP API (`/json`, `/v1/check`,
 * `/healthcheck`, `/metrics`, `/admin`, the dashboard) and, with `gateway`, the gateway.
 *
 * @example
 * import { startService } from 'sluice-server';
 * const service = await startService({ config: './rules', host: '127.0.0.1', http: { port: 0 }, grpc: { port: 0 } });
 * console.log(service.httpPort, service.grpcPort);
 * await service.close();
 */
export async function startService(options: ServiceOptions = {}): Promise<ServiceHandle> {
  checkServiceOptions(options);
  const logger = options.observability?.logger ?? createLogger(options.observability?.logLevel ?? 'info');
  // Checked before any port or store is opened: a short admin token, the rules, the TLS files.
  const adminAuth = createAdminAuth(options.adminToken);
  const first = await loadFirstRules(options);
  const tlsMaterial = options.grpc?.tls === undefined ? undefined : readTlsMaterial(options.grpc.tls);
  const core = await buildCore(options, first, logger);
  const clock = options.clock ?? systemClock;
  const { backend, telemetry, engine, feed, decider, lists, hub } = core;
  const { store } = backend;
  const { metrics } = telemetry;
  let draining = false;
  const health = createHealth({
    storeName: store.name,
    ...(backend.ping === undefined ? {} : { ping: backend.ping }),
    failClosed: options.fail === undefined || options.fail === 'closed',
    ...(store.isReady === undefined ? {} : { ready: () => store.isReady !== false }),
    draining: () => draining,
    configLoaded: () => !feed.awaitingXds() && (options.healthNeedsConfig !== true || engine.ruleSet.domains.size > 0),
  });
  // The dashboard's stats: per-rule decisions per second and the keys nearest their limits, bounded.
  const stats = createStatsCollector({ hub, now: () => clock.now() });
  const config = feed.source;
  const api = createServiceHttp(options, {
    ...core,
    store,
    clock,
    metrics,
    config,
    health,
    stats,
    adminAuth,
    ...(backend.regions === undefined ? {} : { regions: backend.regions }),
  });
  const gateway = createServiceGateway(options.gateway, { engine, decider, lists, metrics, logger, store, clock, hub });
  const adaptive = gateway?.adaptive;
  if (adaptive !== undefined) registerAdaptiveMetrics(metrics.registry, 'gateway', () => adaptive.stats());
  if (feed.awaitingXds()) {
    // Listening at once, not ready (503) until the first config: awaiting it here, with nothing listening,
    // left Node nothing to wait on while the management server was unreachable, and it exited 0.
    logger.info(
      { server: options.xds?.server },
      'not ready until the first config arrives from the xDS management server',
    );
  }
  const graceMs = options.shutdownGraceMs ?? 10_000;
  const host = options.host ?? '0.0.0.0';
  const started: Listening[] = [];
  const shutdown = async () => {
    await Promise.all(started.map((s) => s.close(graceMs)));
    await core.capture?.close();
    await backend.shutdown();
    await telemetry.close();
  };
  try {
    const http = await listenDrained(api, options.http?.port ?? 8080, host);
    started.push(http);
    const grpc = await startServiceGrpc(options, {
      decider,
      metrics,
      logger,
      health,
      ...(tlsMaterial === undefined ? {} : { tlsMaterial }),
    });
    started.push(grpc);
    const listener = options.observability?.metricsListener;
    if (listener !== undefined) {
      started.push(
        await listenDrained(
          createMetricsServer(telemetry.listenerMetrics, listener.path),
          listener.port,
          listener.host,
        ),
      );
    }
    const proxy =
      gateway === undefined ? undefined : await listenDrained(gateway.server, options.gateway?.port ?? 8000, host);
    if (proxy !== undefined) started.push(proxy);
    const stopWatching = options.watch === false ? () => {} : config.watch();
    logListening(options, core, { http: http.port, grpc: grpc.port, proxy: proxy?.port, upstream: gateway?.upstream });
    let closing: Promise<void> | undefined;
    return {
      httpPort: http.port,
      grpcPort: grpc.port,
      ...(options.grpc?.socket === undefined ? {} : { grpcSocket: options.grpc.socket }),
      ...(proxy === undefined ? {} : { proxyPort: proxy.port }),
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
          stats.close();
          await shutdown();
          logger.info('stopped');
        })();
        return closing;
      },
    };
  } catch (error) {
    await shutdown();
    throw error;
  }
}

/** The store, telemetry, engine, rules feed and decider; on a bad option, what was opened is closed again. */
async function buildCore(
  options: ServiceOptions,
  first: Awaited<ReturnType<typeof loadFirstRules>>,
  logger: Logger,
): Promise<Core> {
  const backend = await openServiceStore(options.store, logger);
  const hub = createDecisionHub();
  const clock = options.clock ?? systemClock;
  let telemetry: ServiceTelemetry | undefined;
  try {
    telemetry = createServiceTelemetry(options.observability ?? {}, hub, backend.store, logger);
    const { metrics, tracer } = telemetry;
    const engine = createServiceEngine(options, first.ruleSet, backend.store, clock);
    const feed = createRulesFeed(options, first, engine, metrics, logger);
    const lists = createAccessLists();
    const nearLimitRatio = options.observability?.nearLimitRatio;
    const uncaptured = createDecider({
      engine,
      lists,
      hub,
      metrics,
      now: () => clock.now(),
      ...(options.headers === undefined ? {} : { headers: options.headers }),
      ...(options.dynamicMetadata === true ? { dynamicMetadata: true } : {}),
      ...(nearLimitRatio === undefined ? {} : { nearLimitRatio }),
    });
    const parts = { decider: uncaptured, engine, clock, registry: metrics.registry, logger };
    const capture = options.capture === undefined ? undefined : startServiceCapture(options.capture, parts);
    const decided = capture?.decider ?? uncaptured;
    const counted = withEnvoyStats(decided, telemetry.envoy, engine, options);
    const decider = tracer === undefined ? counted : traceDecisions(counted, tracer);
    const captured = capture === undefined ? {} : { capture };
    return { backend, telemetry, engine, feed, decider, lists, hub, logger, ...captured };
  } catch (error) {
    // A bad option must not leave a Redis connection holding the process open.
    await telemetry?.close();
    await backend.shutdown();
    throw error;
  }
}

/** The one line that says the service is up, and where. */
function logListening(
  options: ServiceOptions,
  core: Core,
  ports: { http: number; grpc: number; proxy: number | undefined; upstream: URL | undefined },
): void {
  const { logger, feed } = core;
  const status = feed.source.status;
  logger.info(
    {
      http: ports.http,
      grpc: options.grpc?.socket ?? ports.grpc,
      ...(ports.proxy === undefined ? {} : { proxy: ports.proxy, upstream: ports.upstream?.origin }),
      host: options.host ?? '0.0.0.0',
      store: core.backend.store.name,
      config:
        status.source === 'example'
          ? 'built-in example'
          : status.source === 'xds'
            ? `xds ${options.xds?.server}`
            : status.files,
      admin: options.adminToken ? 'on' : 'off',
    },
    'listening',
  );
  if (options.http?.clientClock === true) {
    logger.warn(
      "--client-clock: /v1/check decides at the caller's nowMs, so a caller can move its counters in time; for tests only",
    );
  }
}
