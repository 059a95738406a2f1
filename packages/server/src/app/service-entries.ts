/**
 * The service's ways in, built over its core before anything listens: health, the dashboard's stats, the
 * HTTP API and (in gateway mode) the gateway, with the gateway's adaptive limit in the metrics.
 */
import type { Server } from 'node:http';
import type { Clock } from 'sluice';
import { registerAdaptiveMetrics } from '../observability/adaptive-metrics.js';
import { createStatsCollector, type StatsCollector } from '../observability/stats/stats-collector.js';
import type { AdminAuthenticator } from '../protocols/http/admin-auth.js';
import { createHealth, type HealthReport } from './health.js';
import type { Core } from './service-core.js';
import { createServiceGateway } from './service-gateway.js';
import { createServiceHttp } from './service-http.js';
import type { ServiceOptions } from './service-options.js';

/** The servers and shared pieces the listeners are built from (none listening yet). */
export interface Entries {
  readonly health: () => Promise<HealthReport>;
  /** The dashboard's stats: per-rule decisions per second and the keys nearest their limits, bounded. */
  readonly stats: StatsCollector;
  /** The HTTP API's server. */
  readonly api: Server;
  /** The gateway, in gateway mode. */
  readonly gateway: ReturnType<typeof createServiceGateway>;
  /** From now on health says draining (503): the service is closing. */
  startDraining(): void;
}

/** Builds the ways in over `core`. */
export function createEntries(
  options: ServiceOptions,
  core: Core,
  adminAuth: AdminAuthenticator,
  clock: Clock,
): Entries {
  const { backend, telemetry, engine, feed, decider, lists, hub, logger } = core;
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
  const stats = createStatsCollector({ hub, now: () => clock.now() });
  const api = createServiceHttp(options, {
    ...core,
    store,
    clock,
    metrics,
    config: feed.source,
    health,
    stats,
    adminAuth,
    ...(backend.regions === undefined ? {} : { regions: backend.regions }),
    // Read at each dashboard poll, after the gateway below exists.
    adaptive: () => gateway?.adaptive?.stats(),
  });
  const gateway = createServiceGateway(options.gateway, { engine, decider, lists, metrics, logger, store, clock, hub });
  const adaptive = gateway?.adaptive;
  if (adaptive !== undefined) registerAdaptiveMetrics(metrics.registry, 'gateway', () => adaptive.stats());
  return {
    health,
    stats,
    api,
    gateway,
    startDraining: () => {
      draining = true;
    },
  };
}
