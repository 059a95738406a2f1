/**
 * Overload: real HTTP on loopback. An upstream with a fixed capacity (16 requests at once, 40 ms each,
 * queueing past that) behind a proxy running sluice's node:http middleware, offered 3× its capacity
 * (20 % of requests critical); after 4 s its service time rises 5×. Rows: no limiter, a fixed
 * concurrency limit (the adaptive limits' initial value), and each adaptive algorithm. Then client
 * throttling against a dead backend, and the cost of acquire + release. The upstream and the load
 * generator run in processes of their own; the proxy in this one.
 *
 *   npm run bench -- overload        (about 60 s)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rateLimit } from '../packages/sluice/src/adapters/node.js';
import type { AdaptiveLimiter } from '../packages/sluice/src/adaptive/index.js';
import { createAdaptiveLimiter } from '../packages/sluice/src/adaptive/index.js';
import { createClient } from '../packages/sluice/src/client/index.js';
import { createConcurrencyLimiter } from '../packages/sluice/src/limiter/concurrency-limiter.js';
import { fmt, opsPerSecondAsync, opsPerSecondSync, table } from './lib/measure.js';
import { offerLoadApart, quantile, type Sample, send, startProxy, startUpstream } from './lib/overload-load.js';

const CAPACITY = 16;
const SERVICE_MS = 40;
const SLOWDOWN = 5;
const CAPACITY_RPS = (CAPACITY * 1000) / SERVICE_MS;
const OFFERED_RPS = 3 * CAPACITY_RPS;
const BEFORE_MS = 4000;
const AFTER_MS = 6000;
/** A client's patience: a request slower than this failed. */
const TIMEOUT_MS = 1000;
const INITIAL_LIMIT = 20;

type Row = { name: string; make?: () => AdaptiveLimiter };
/**
 * Critical traffic is 20 % of the offered load, 60 % of the capacity: its share reserves 70 % of the
 * limit for it. A short queue, so a freed place goes to a waiting critical request before a normal one.
 */
const shared = { priorities: { critical: 0.7, normal: 0.3 }, queue: { size: 32, timeoutMs: 200 } };
const adaptive = (algorithm: 'gradient2' | 'vegas' | 'aimd') => () =>
  createAdaptiveLimiter({ algorithm, initialLimit: INITIAL_LIMIT, maxLimit: 500, ...shared });
const ROWS: Row[] = [
  { name: 'no limiter' },
  {
    name: `fixed concurrency ${INITIAL_LIMIT}`,
    make: () =>
      createAdaptiveLimiter({
        initialLimit: INITIAL_LIMIT,
        minLimit: INITIAL_LIMIT,
        maxLimit: INITIAL_LIMIT,
        ...shared,
      }),
  },
  { name: 'adaptive gradient2', make: adaptive('gradient2') },
  { name: 'adaptive vegas', make: adaptive('vegas') },
  { name: 'adaptive aimd', make: adaptive('aimd') },
];

const pct = (n: number, of: number) => (of === 0 ? '-' : `${fmt((100 * n) / of, 1)} %`);

/** The first time after the change from which the limit stays within 25 % of where it ends. */
function settleMs(limits: { atMs: number; limit: number }[]): number | undefined {
  const after = limits.filter((l) => l.atMs >= BEFORE_MS);
  const tail = after.slice(-10).map((l) => l.limit);
  const final = tail.reduce((a, b) => a + b, 0) / Math.max(1, tail.length);
  let settled: number | undefined;
  for (const l of after) {
    if (Math.abs(l.limit - final) > 0.25 * final) settled = undefined;
    else settled ??= l.atMs - BEFORE_MS;
  }
  return settled;
}

async function runRow(row: Row, unloadedP99: number): Promise<string[]> {
  const upstream = await startUpstream(CAPACITY, SERVICE_MS);
  const limiter = row.make?.();
  const priority = (req: import('node:http').IncomingMessage) =>
    req.headers['x-priority'] === 'critical' ? 'critical' : 'normal';
  const proxy = await startProxy(upstream.url, limiter && rateLimit({ adaptive: { limiter, priority } }));
  const limits: { atMs: number; limit: number }[] = [];
  let slowed = false;
  const load = {
    url: proxy.url,
    ratePerS: OFFERED_RPS,
    durationMs: BEFORE_MS + AFTER_MS,
    criticalShare: 0.2,
    timeoutMs: TIMEOUT_MS,
  };
  const samples = await offerLoadApart(load, (at) => {
    if (limiter) limits.push({ atMs: at, limit: limiter.limit });
    if (!slowed && at >= BEFORE_MS) {
      slowed = true;
      void send(`${upstream.url}/factor?f=${SLOWDOWN}`, {}, 1000);
    }
  });
  proxy.server.closeAllConnections();
  proxy.server.close();
  upstream.stop();
  // Success: a 200 within the client's patience (the socket timeout alone lets a trickling answer run longer).
  const ok = (s: Sample) => s.status === 200 && s.ms <= TIMEOUT_MS;
  const phase = (s: Sample, before: boolean) => s.atMs < BEFORE_MS === before;
  const critical = samples.filter((s) => s.critical);
  const cell = (before: boolean) => {
    const crit = critical.filter((s) => phase(s, before));
    const good = samples.filter((s) => phase(s, before) && ok(s)).length;
    const seconds = (before ? BEFORE_MS : AFTER_MS) / 1000;
    const capacity = before ? CAPACITY_RPS : CAPACITY_RPS / SLOWDOWN;
    return [pct(crit.filter(ok).length, crit.length), pct(good / seconds, capacity)];
  };
  const [critBefore, goodBefore] = cell(true);
  const [critAfter, goodAfter] = cell(false);
  // Steady state before the change: past the first second (the limits start at 20), and sent at least a
  // client timeout before the change (later ones may finish after it, at the slower speed).
  const steady = (x: Sample) => x.atMs >= 1000 && x.atMs < BEFORE_MS - TIMEOUT_MS;
  const critP99 = quantile(
    critical.filter((x) => ok(x) && steady(x)).map((x) => x.ms),
    0.99,
  );
  const settled = limiter ? settleMs(limits) : undefined;
  const shed = limiter ? limiter.stats().priorities : undefined;
  return [
    row.name,
    `${critBefore} / ${critAfter}`,
    Number.isNaN(critP99) ? 'none succeeded' : `${fmt(critP99, 0)} ms (${fmt(critP99 / unloadedP99, 1)}×)`,
    `${goodBefore} / ${goodAfter}`,
    settled === undefined ? (limiter ? 'never' : '-') : `${fmt(settled / 1000, 1)} s`,
    limiter ? `${limits[limits.length - 1]?.limit}` : '-',
    shed ? `${fmt(shed.critical?.shed ?? 0)} / ${fmt(shed.normal?.shed ?? 0)}` : '-',
  ];
}

/** p99 latency of the upstream through the proxy at a tenth of its capacity. */
async function unloaded(): Promise<number> {
  const upstream = await startUpstream(CAPACITY, SERVICE_MS);
  const proxy = await startProxy(upstream.url, undefined);
  const load = {
    url: proxy.url,
    ratePerS: CAPACITY_RPS / 10,
    durationMs: 1500,
    criticalShare: 0.2,
    timeoutMs: TIMEOUT_MS,
  };
  const samples = await offerLoadApart(load, () => {});
  proxy.server.closeAllConnections();
  proxy.server.close();
  upstream.stop();
  return quantile(
    samples.map((s) => s.ms),
    0.99,
  );
}

/** Ten clients sending 50 requests a second each for 2 s to a dead backend (connection refused). */
async function throttling(): Promise<string[][]> {
  const gone = createServer();
  await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(gone.address() as AddressInfo).port}/`;
  await new Promise((r) => gone.close(r));
  const rows: string[][] = [];
  for (const throttled of [false, true]) {
    let sent = 0;
    const counting: typeof fetch = (input, init) => {
      sent++;
      return fetch(input, init);
    };
    const clients = Array.from({ length: 10 }, () =>
      createClient({ fetch: counting, retries: 0, ...(throttled ? { adaptiveThrottle: true } : {}) }),
    );
    let attempts = 0;
    const start = performance.now();
    while (performance.now() - start < 2000) {
      await Promise.all(clients.map((c) => c.fetch(url).catch(() => {})));
      attempts += clients.length;
      await new Promise((r) => setTimeout(r, 20));
    }
    rows.push([throttled ? 'adaptiveThrottle: true' : 'no throttling', fmt(attempts), fmt(sent), '0']);
  }
  return rows;
}

/** acquire + release per CPU-second: the adaptive limiter vs the fixed concurrency limiter. */
async function overhead(): Promise<string[][]> {
  const limiter = createAdaptiveLimiter({ algorithm: 'gradient2', initialLimit: 100, maxLimit: 1000 });
  const n = 1_000_000;
  opsPerSecondSync(n / 10, () => {
    const p = limiter.tryAcquire();
    if (p.allowed) p.release();
  });
  const adaptiveSync = opsPerSecondSync(n, () => {
    const p = limiter.tryAcquire();
    if (p.allowed) p.release();
  });
  const adaptiveAsync = await opsPerSecondAsync(n / 4, async () => {
    const p = await limiter.acquire();
    if (p.allowed) p.release();
  });
  const fixed = createConcurrencyLimiter({ limit: 100 });
  const fixedAsync = await opsPerSecondAsync(n / 4, async () => {
    const d = await fixed.acquire('k');
    if (d.lease) await fixed.release(d.lease);
  });
  return [
    ['adaptive: tryAcquire + release (sync)', fmt(adaptiveSync), fmt(adaptiveSync / fixedAsync, 1)],
    ['adaptive: await acquire + release', fmt(adaptiveAsync), fmt(adaptiveAsync / fixedAsync, 1)],
    ['createConcurrencyLimiter: acquire + release (memory)', fmt(fixedAsync), '1.0'],
  ];
}

const unloadedP99 = await unloaded();
console.log(
  `Upstream: ${CAPACITY} at once × ${SERVICE_MS} ms = ${fmt(CAPACITY_RPS)} req/s; offered ${fmt(OFFERED_RPS)} req/s (3×), 20 % critical; service time ×${SLOWDOWN} after ${BEFORE_MS / 1000} s (capacity ${fmt(CAPACITY_RPS / SLOWDOWN)} req/s), ${AFTER_MS / 1000} s more. Client timeout ${TIMEOUT_MS} ms. Unloaded p99: ${fmt(unloadedP99, 1)} ms.\n`,
);
const rows: string[][] = [];
for (const row of ROWS) rows.push(await runRow(row, unloadedP99));
console.log(
  table(
    [
      '',
      'critical ok (before / after)',
      'critical p99, steady before (× unloaded)',
      'goodput % of capacity (before / after)',
      'limit settles after the change',
      'final limit',
      'shed critical / normal',
    ],
    rows,
  ),
);
console.log('\nClient throttling, backend dead (connection refused), 10 clients for 2 s:\n');
console.log(table(['', 'requests made', 'sent to the backend', 'accepted'], await throttling()));
console.log('\nOverhead, per CPU-second:\n');
console.log(table(['', 'acquire + release / s', '× createConcurrencyLimiter'], await overhead()));
