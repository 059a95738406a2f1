/** The service's HTTP API server: decisions (`/json`, `/v1/check`), health, metrics, admin, the dashboard and its data. */
import type { Server } from 'node:http';
import type { Clock, Store } from 'sluice';
import type { AdaptiveStats } from 'sluice/adaptive';
import type { RulesEngine } from 'sluice/rules';
import type { RegionsView } from '../backends/multi-region-backend.js';
import type { ConfigSource } from '../config/config-source.js';
import type { AccessLists } from '../core/access-lists.js';
import type { Decider } from '../core/decide.js';
import type { DecisionHub } from '../observability/decision-events.js';
import type { Logger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { StatsCollector } from '../observability/stats/stats-collector.js';
import type { AdminAuthenticator } from '../protocols/http/admin-auth.js';
import { checkAdmin, createAdminRoutes } from '../protocols/http/admin-routes.js';
import { createApiServer, type RouteHandler } from '../protocols/http/api-server.js';
import { createCheckApi } from '../protocols/http/check-api.js';
import { createDashboardRoutes } from '../protocols/http/dashboard-routes.js';
import { DEFAULT_MAX_BODY_BYTES, sendJson } from '../protocols/http/respond.js';
import { createStaticHandler, DASHBOARD_DIR } from '../protocols/http/static-files.js';
import { createAdminActions } from './admin-actions.js';
import type { HealthReport } from './health.js';
import type { ServiceCapture } from './service-capture.js';
import { createServiceExplain } from './service-explain.js';
import type { ServiceOptions } from './service-options.js';

/** The parts of a running service the HTTP API answers from. */
export interface HttpParts {
  readonly engine: RulesEngine;
  readonly store: Store;
  readonly clock: Clock;
  readonly decider: Decider;
  readonly lists: AccessLists;
  readonly hub: DecisionHub;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  readonly config: ConfigSource;
  readonly health: () => Promise<HealthReport>;
  readonly stats: StatsCollector;
  readonly adminAuth: AdminAuthenticator;
  /** `--capture`: `/v1/check`'s decisions are captured too. */
  readonly capture?: ServiceCapture;
  readonly regions?: () => RegionsView;
  /** The gateway's adaptive limit's figures, for the dashboard (undefined: off). */
  readonly adaptive?: () => AdaptiveStats | undefined;
}

/** The HTTP API server (not listening yet). */
export function createServiceHttp(options: ServiceOptions, parts: HttpParts): Server {
  const { engine, store, clock, lists, hub, metrics, config, adminAuth } = parts;
  const http = options.http ?? {};
  const maxBodyBytes = http.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const now = () => clock.now();
  const nearLimitRatio = options.observability?.nearLimitRatio;
  const checkApi = createCheckApi({
    store,
    lists,
    hub,
    metrics,
    now,
    ...(options.fail === undefined ? {} : { fail: options.fail }),
    ...(http.clientClock === true ? { clientClock: true } : {}),
    ...(http.reservationTtlMs === undefined ? {} : { reservationTtlMs: http.reservationTtlMs }),
    ...(http.maxReservations === undefined ? {} : { maxReservations: http.maxReservations }),
    ...(nearLimitRatio === undefined ? {} : { nearLimitRatio }),
    ...(parts.capture === undefined ? {} : { capture: parts.capture.check }),
  });
  const dashboardDir = http.dashboardDir === undefined ? DASHBOARD_DIR : http.dashboardDir;
  return createApiServer({
    decider: parts.decider,
    checkApi,
    metrics,
    logger: parts.logger,
    maxBodyBytes,
    health: parts.health,
    admin: createAdminRoutes({
      auth: adminAuth,
      now,
      lists,
      actions: createAdminActions({ engine, store, clock, config }),
      maxBodyBytes,
      explain: createServiceExplain(options, parts),
    }),
    routes: dataRoutes(options, parts),
    ...(dashboardDir === false ? {} : { staticFiles: createStaticHandler(dashboardDir) }),
  });
}

/** The dashboard's data routes, `/api/rules`, `/api/status`, and the caller's own `http.routes`. */
function dataRoutes(options: ServiceOptions, parts: HttpParts): Map<string, RouteHandler> {
  const { engine, config, health, lists, metrics, adminAuth, clock } = parts;
  const now = () => clock.now();
  const routes = new Map<string, RouteHandler>(
    Object.entries(
      createDashboardRoutes({
        stats: parts.stats,
        rules: () => engine.describeRules(),
        config: () => config.status,
        health,
        lists,
        storeName: parts.store.name,
        registry: metrics.registry,
        ...(parts.regions === undefined ? {} : { regions: parts.regions }),
        ...(parts.adaptive === undefined ? {} : { adaptive: parts.adaptive }),
        adminEnabled: options.adminToken !== undefined && options.adminToken !== '',
        // Raw keys only with the admin token; a wrong one is refused (and counts towards the backoff).
        keyAccess: (req) => (checkAdmin(adminAuth, req, now, true) === 'ok' ? 'raw' : 'masked'),
        now,
      }),
    ),
  );
  for (const [path, handler] of Object.entries(options.http?.routes ?? {})) routes.set(path, handler);
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
  return routes;
}
