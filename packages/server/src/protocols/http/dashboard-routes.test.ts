import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startService } from '../../app/service.js';
import { createAccessLists } from '../../core/access-lists.js';
import type { DecisionEvent } from '../../observability/decision-events.js';
import { createStatsCollector } from '../../observability/stats/stats-collector.js';
import { toHttpError } from './api-server.js';
import { createDashboardRoutes } from './dashboard-routes.js';
import { sendError } from './respond.js';

const event: DecisionEvent = {
  source: 'json',
  domain: 'shop',
  rule: 'shop|api_key',
  key: 'api_key=k1',
  outcome: 'over_limit',
  limit: 10,
  remaining: 0,
  resetMs: 30_000,
  atMs: 0,
};

describe('dashboard routes', () => {
  let nowMs = 1_000_000;
  const stats = createStatsCollector({ now: () => nowMs });
  const lists = createAccessLists();
  lists.add('deny', { value: '203.0.113.7' });
  const routes = createDashboardRoutes({
    stats,
    rules: () => [],
    config: () => ({ source: 'example', paths: [], files: ['<built-in example>'], loadedAt: '2026-01-01T00:00:00Z' }),
    health: async () => ({ status: 200, body: { status: 'ok', store: 'memory', storeReachable: true } }),
    lists,
    storeName: 'memory',
    adminEnabled: false,
    now: () => nowMs,
  });
  let server: Server;
  let base: string;

  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const route = routes[url.pathname];
      if (route === undefined) {
        res.writeHead(404).end();
        return;
      }
      // As the API server does: a handler may throw an HttpError synchronously or reject.
      (async () => route(req, res, url))().catch((error: unknown) => sendError(res, toHttpError(error)));
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((done) => server.close(() => done())));

  it('answers everything the page needs in one document, and only new seconds after ?since', async () => {
    stats.record({ ...event, atMs: nowMs });
    stats.record({ ...event, atMs: nowMs + 10, outcome: 'ok', key: 'api_key=k2', remaining: 5 });
    nowMs += 2000;
    const body = (await (await fetch(`${base}/api/dashboard`)).json()) as {
      service: { store: string; health: { status: string }; latency: unknown; adminEnabled: boolean };
      config: { source: string };
      stats: { fromS: number; toS: number; rules: { rule: string; counts: { over_limit: number[] } }[] };
      topKeys: { key: string; over: boolean }[];
      lists: { allow: number; deny: number };
    };
    assert.equal(body.service.store, 'memory');
    assert.equal(body.service.health.status, 'ok');
    assert.equal(body.service.latency, null);
    assert.equal(body.service.adminEnabled, false);
    assert.equal(body.config.source, 'example');
    assert.deepEqual(body.lists, { allow: 0, deny: 1 });
    assert.deepEqual(body.stats.rules[0]?.counts.over_limit, [1, 0]);
    // Without the admin token the values of counted keys are masked, stably.
    assert.deepEqual(
      body.topKeys.map((k) => k.over),
      [true, false],
    );
    const [k1, k2] = body.topKeys.map((k) => k.key);
    assert.match(k1 ?? '', /^api_key=#[0-9a-f]{10}$/);
    assert.notEqual(k1, k2);
    const again = (await (await fetch(`${base}/api/top-keys`)).json()) as {
      keys: { key: string }[];
      keysMasked: boolean;
    };
    assert.equal(again.keys[0]?.key, k1);
    assert.equal(again.keysMasked, true);
    const next = (await (await fetch(`${base}/api/stats?since=${body.stats.toS}`)).json()) as typeof body.stats;
    assert.equal(next.fromS, body.stats.toS + 1);
    assert.deepEqual(next.rules[0]?.counts.over_limit, []);
  });

  it('bounds and validates its parameters', async () => {
    const top = await fetch(`${base}/api/top-keys?n=1`);
    assert.equal(((await top.json()) as { keys: unknown[] }).keys.length, 1);
    for (const query of ['n=0', 'n=101', 'n=abc']) {
      const res = await fetch(`${base}/api/top-keys?${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'ERR_SLUICE_INVALID_REQUEST');
    }
    assert.equal((await fetch(`${base}/api/stats?since=x`)).status, 400);
    assert.equal((await fetch(`${base}/api/dashboard`, { method: 'POST' })).status, 405);
  });

  it('serves uPlot from the installed package', async () => {
    const js = await fetch(`${base}/vendor/uPlot.esm.js`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /text\/javascript/);
    assert.match(await js.text(), /export \{ uPlot as default \}/);
    const css = await fetch(`${base}/vendor/uPlot.min.css`);
    assert.match(css.headers.get('content-type') ?? '', /text\/css/);
  });
});

describe('the service serves the dashboard', () => {
  it('at /, with its data at /api/dashboard fed by the decision hub', async () => {
    const service = await startService({
      host: '127.0.0.1',
      http: { port: 0 },
      grpc: { port: 0 },
      observability: { logLevel: 'silent' },
    });
    try {
      const base = `http://127.0.0.1:${service.httpPort}`;
      const page = await fetch(`${base}/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /text\/html/);
      assert.match(await page.text(), /<script type="module" src="app\.js"><\/script>/);
      for (const file of ['app.js', 'charts.js', 'dom.js', 'lists.js', 'tables.js', 'styles.css']) {
        assert.equal((await fetch(`${base}/${file}`)).status, 200, file);
      }
      service.hub.emit({ ...event, domain: 'example', rule: 'example|api_key', atMs: Date.now() });
      const body = (await (await fetch(`${base}/api/dashboard`)).json()) as {
        rules: { id: string }[];
        topKeys: { key: string }[];
      };
      assert.ok(body.rules.some((r) => r.id === 'example|remote_address'));
      assert.match(body.topKeys[0]?.key ?? '', /^api_key=#/, 'no admin token is configured: keys stay masked');
    } finally {
      await service.close();
    }
  });

  it('shows raw keys only with the admin token, refuses a wrong one, and slows down guessing', async () => {
    const token = 'dashboard-unit-token-0123456789';
    const service = await startService({
      host: '127.0.0.1',
      http: { port: 0 },
      grpc: { port: 0 },
      observability: { logLevel: 'silent' },
      adminToken: token,
    });
    try {
      const base = `http://127.0.0.1:${service.httpPort}`;
      service.hub.emit({ ...event, domain: 'example', rule: 'example|api_key', atMs: Date.now() });
      const keys = async (authorization?: string) => {
        const res = await fetch(`${base}/api/top-keys`, authorization ? { headers: { authorization } } : {});
        return {
          status: res.status,
          body: (await res.json()) as { keys?: { key: string }[]; error?: { code: string } },
        };
      };
      assert.match((await keys()).body.keys?.[0]?.key ?? '', /^api_key=#/);
      assert.equal((await keys(`Bearer ${token}`)).body.keys?.[0]?.key, 'api_key=k1');
      const wrong = await keys('Bearer not-the-token-at-all-0000');
      assert.equal(wrong.status, 403);
      for (let i = 0; i < 5; i++) await keys('Bearer not-the-token-at-all-0000');
      const locked = await fetch(`${base}/admin/lists`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(locked.status, 429, 'past 5 wrong tokens even the right one waits');
      assert.ok(Number(locked.headers.get('retry-after')) >= 1);
      assert.equal(((await locked.json()) as { error: { code: string } }).error.code, 'ERR_SLUICE_ADMIN_LOCKED');
    } finally {
      await service.close();
    }
  });
});
