/** The dashboard's data routes (`/api/dashboard`, keys, regions), with raw keys only for the admin token. */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Registry } from 'prom-client';
import type { AdaptiveStats } from 'sluice/adaptive';
import type { RuleDescription } from 'sluice/rules';
import type { ConfigStatus } from '../../config/config-source.js';
import type { AccessLists } from '../../core/access-lists.js';
import { createKeyMasker, maskTopKeys } from '../../observability/stats/mask-keys.js';
import type { StatsCollector } from '../../observability/stats/stats-collector.js';
import type { StoreLatency } from '../../observability/stats/store-latency.js';
import { createStoreLatencyReader } from '../../observability/stats/store-latency.js';
import type { RouteHandler } from './api-server.js';
import { adaptiveView } from './dashboard-adaptive.js';
import { setNoFraming } from './frame-headers.js';
import { HttpError, sendJson } from './respond.js';

/** Options of {@link createDashboardRoutes}. */
export interface DashboardRoutesOptions {
  stats: StatsCollector;
  /** The rules in force (`engine.describeRules()`). */
  rules: () => readonly RuleDescription[];
  /** Where the rules come from and how the last (re)load went. */
  config: () => ConfigStatus;
  /** What `GET /healthcheck` answers. */
  health: () => Promise<{ status: number; body: unknown }>;
  /** The allow/deny lists: only their sizes are shown here; the entries need the admin token. */
  lists: AccessLists;
  /** `memory`, `redis`, ... */
  storeName: string;
  /** The service's metrics registry, for recent store latency. Absent: no latency figures. */
  registry?: Registry;
  /** The regions, when the service runs in one of several (shown on a card of their own). */
  regions?: () => unknown;
  /** The gateway's adaptive limit (`--adaptive`), read at each poll; absent or undefined: off. */
  adaptive?: () => AdaptiveStats | undefined;
  /** Whether the admin API is on (a token is configured), so the page offers the token field. */
  adminEnabled: boolean;
  /** @default Date.now */
  now?: () => number;
  /**
   * Whether a request may see the counted keys as they are (`raw`: it carries the admin token) or masked
   * (`masked`). Throws an HttpError to refuse (a wrong token). @default every request sees them masked
   */
  keyAccess?: (req: IncomingMessage) => 'raw' | 'masked';
  /**
   * The secret of the key masks (an HMAC over policy and key): the same on several instances shows the
   * same masks on each. @default 32 random bytes, new in each process
   */
  maskSecret?: string | Uint8Array;
}

/** Most keys `GET /api/top-keys?n=` answers. */
export const MAX_TOP_KEYS = 100;

/** The chart library, served from the installed package (nothing is loaded from the internet). */
const VENDOR: Readonly<Record<string, { file: string; type: string }>> = {
  '/vendor/uPlot.esm.js': { file: 'dist/uPlot.esm.js', type: 'text/javascript; charset=utf-8' },
  '/vendor/uPlot.min.css': { file: 'dist/uPlot.min.css', type: 'text/css; charset=utf-8' },
};

/**
 * The dashboard's read-only JSON endpoints, by exact path, for `startService({ routes })`:
 *
 * - `GET /api/dashboard?since=S` — everything the page shows, in one answer per poll: service and store
 *   health with recent store latency, config status, rules, decisions per second per rule for the complete
 *   seconds after epoch second `S` (the whole 5-minute window without it), the top 20 keys, list sizes,
 *   and the gateway's adaptive limit (`adaptive`: limit, in flight, queued, per priority; null when off).
 * - `GET /api/stats?since=S` — the per-second counts alone.
 * - `GET /api/top-keys?n=20` — the keys closest to or over their limits (n ≤ 100).
 * - `GET /vendor/uPlot.esm.js`, `/vendor/uPlot.min.css` — the chart library, from `node_modules`.
 *
 * Nothing here changes state and no entry of the allow/deny lists is shown: those go through `/admin`
 * with the admin token.
 */
export function createDashboardRoutes(options: DashboardRoutesOptions): Record<string, RouteHandler> {
  const { stats, lists } = options;
  const now = options.now ?? Date.now;
  const latency: () => Promise<StoreLatency | null> =
    options.registry === undefined
      ? () => Promise.resolve(null)
      : createStoreLatencyReader({ registry: options.registry, now });
  const startedAtMs = Date.now();
  const mask = createKeyMasker(options.maskSecret === undefined ? {} : { secret: options.maskSecret });
  /** The top keys as this caller may see them: raw with the admin token, values masked without. */
  const topKeysFor = (req: IncomingMessage, n: number) => {
    const raw = (options.keyAccess?.(req) ?? 'masked') === 'raw';
    const keys = stats.topKeys(n);
    return { keys: raw ? keys : maskTopKeys(keys, mask), keysMasked: !raw };
  };

  const dashboard: RouteHandler = async (req, res, url) => {
    onlyGet(req);
    const top = topKeysFor(req, 20);
    const [health, storeLatency] = await Promise.all([options.health(), latency()]);
    sendJson(res, 200, {
      now: now(),
      service: {
        store: options.storeName,
        health: health.body,
        healthStatus: health.status,
        latency: storeLatency,
        uptimeS: Math.round((Date.now() - startedAtMs) / 1000),
        adminEnabled: options.adminEnabled,
        ...(options.regions === undefined ? {} : { regions: options.regions() }),
      },
      config: options.config(),
      rules: options.rules(),
      stats: stats.stats(sinceOf(url)),
      topKeys: top.keys,
      keysMasked: top.keysMasked,
      trackedKeys: stats.trackedKeys,
      lists: { allow: lists.list('allow').length, deny: lists.list('deny').length },
      adaptive: adaptiveView(options.adaptive?.()),
    });
  };

  const routes: Record<string, RouteHandler> = {
    '/api/dashboard': dashboard,
    '/api/stats': (req, res, url) => {
      onlyGet(req);
      sendJson(res, 200, stats.stats(sinceOf(url)));
    },
    '/api/top-keys': (req, res, url) => {
      onlyGet(req);
      const text = url.searchParams.get('n');
      const n = text === null ? 20 : Number(text);
      if (!Number.isInteger(n) || n < 1 || n > MAX_TOP_KEYS) {
        throw new HttpError(400, 'ERR_SLUICE_INVALID_REQUEST', `n: expected a whole number from 1 to ${MAX_TOP_KEYS}`);
      }
      const top = topKeysFor(req, n);
      sendJson(res, 200, { keys: top.keys, keysMasked: top.keysMasked, trackedKeys: stats.trackedKeys });
    },
  };
  const uplotDir = dirname(createRequire(import.meta.url).resolve('uplot/package.json'));
  const cache = new Map<string, Buffer>();
  for (const [path, { file, type }] of Object.entries(VENDOR)) {
    routes[path] = async (req, res) => {
      onlyGet(req);
      let body = cache.get(path);
      if (body === undefined) {
        body = await readFile(join(uplotDir, file));
        cache.set(path, body);
      }
      sendStatic(req, res, type, body);
    };
  }
  return routes;
}

function onlyGet(req: IncomingMessage): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    throw new HttpError(405, 'ERR_SLUICE_METHOD_NOT_ALLOWED', 'use GET');
  }
}

function sinceOf(url: URL): number | undefined {
  const text = url.searchParams.get('since');
  if (text === null || text === '') return undefined;
  const since = Number(text);
  if (!Number.isFinite(since)) {
    throw new HttpError(400, 'ERR_SLUICE_INVALID_REQUEST', 'since: expected an epoch second');
  }
  return since;
}

function sendStatic(req: IncomingMessage, res: ServerResponse, type: string, body: Buffer): void {
  setNoFraming(res);
  res.writeHead(200, {
    'content-type': type,
    'content-length': body.length,
    // The file changes only with the installed package version.
    'cache-control': 'public, max-age=3600',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
