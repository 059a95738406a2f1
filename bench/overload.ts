/**
 * Overload: real HTTP on loopback. An upstream with a fixed capacity (16 requests at once, 40 ms each,
 * queueing past that) behind a proxy running sluice's node:http middleware; after 4 s its service time
 * rises 5×. The load comes two ways: 48 closed-loop callers (3× the upstream's concurrency, 20 % of them
 * critical; the goals are judged on this table), then open loop at 3× the capacity in requests per second.
 * Rows: no limiter, a fixed concurrency limit (the adaptive limits' initial value), and each adaptive
 * algorithm. Then client throttling against a dead backend, and the cost of acquire + release. The
 * upstream and the load generator run in processes of their own; the proxy in this one.
 *
 *   npm run bench -- overload        (about 2 minutes)
 */
import type { AdaptiveLimiter } from '../packages/sluice/src/adaptive/index.js';
import { createAdaptiveLimiter } from '../packages/sluice/src/adaptive/index.js';
import { fmt, table } from './lib/measure.js';
import { overhead, throttling } from './lib/overload-extras.js';
import { offerLoadApart, quantile, startProxy, startUpstream } from './lib/overload-load.js';
import { runRow, type Setup } from './lib/overload-row.js';

const CAPACITY = 16;
const SERVICE_MS = 40;
const SLOWDOWN = 5;
const CAPACITY_RPS = (CAPACITY * 1000) / SERVICE_MS;
const INITIAL_LIMIT = 20;
/** Closed loop: callers 3× the upstream's concurrency; a refused caller waits this long before asking again. */
const CALLERS = 3 * CAPACITY;
const BACKOFF_MS = 50;

type Row = { name: string; make?: () => AdaptiveLimiter };
/**
 * Critical traffic is a fifth of the load, about 60 % of the capacity either way: its share reserves 70 %
 * of the limit for it. A short queue, so a freed place goes to a waiting critical request before a normal one.
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

/**
 * p99 latency through the proxy at a quarter of the upstream's capacity (4 requests in flight of its 16:
 * no queue), at `serviceMs` a request; enough samples (300 and 100) that one stall is not the p99.
 */
async function unloaded(serviceMs: number, durationMs: number): Promise<number> {
  const upstream = await startUpstream(CAPACITY, serviceMs);
  const proxy = await startProxy(upstream.url, undefined);
  const load = {
    url: proxy.url,
    ratePerS: (CAPACITY * 250) / serviceMs,
    durationMs,
    criticalShare: 0.2,
    timeoutMs: 1000,
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

const setup: Setup = {
  capacity: CAPACITY,
  serviceMs: SERVICE_MS,
  slowdown: SLOWDOWN,
  beforeMs: 4000,
  afterMs: 6000,
  timeoutMs: 1000,
  unloadedP99: { before: await unloaded(SERVICE_MS, 3000), after: await unloaded(SERVICE_MS * SLOWDOWN, 5000) },
};
const durationMs = setup.beforeMs + setup.afterMs;
const common = { durationMs, criticalShare: 0.2, timeoutMs: setup.timeoutMs };
const head = [
  '',
  'critical ok (before / after)',
  'critical p99 before / after (× unloaded at that service time)',
  'goodput % of capacity (before / after)',
  'limit settles after the change',
  'final limit',
  'shed critical / normal',
];
const runTable = async (load: Parameters<typeof runRow>[2]) => {
  const rows: string[][] = [];
  for (const row of ROWS) rows.push([row.name, ...(await runRow(setup, row.make?.(), load))]);
  return table(head, rows);
};

console.log(
  `Upstream: ${CAPACITY} at once × ${SERVICE_MS} ms = ${fmt(CAPACITY_RPS)} req/s; service time ×${SLOWDOWN} after ${setup.beforeMs / 1000} s (${fmt(CAPACITY_RPS / SLOWDOWN)} req/s), ${setup.afterMs / 1000} s more. Client timeout ${setup.timeoutMs} ms. Unloaded p99: ${fmt(setup.unloadedP99.before, 1)} ms at ${SERVICE_MS} ms, ${fmt(setup.unloadedP99.after, 1)} ms at ${SERVICE_MS * SLOWDOWN} ms.\n`,
);
console.log(
  `Closed loop (the goals' table): ${CALLERS} callers, 20 % of them critical, each sending its next request when the last is answered (after ${BACKOFF_MS} ms when it was refused or failed):\n`,
);
console.log(await runTable({ ...common, callers: CALLERS, backoffMs: BACKOFF_MS }));
console.log(
  `\nOpen loop: ${fmt(3 * CAPACITY_RPS)} req/s offered whatever the answers, 20 % critical. After the slowdown critical traffic alone (${fmt(0.6 * CAPACITY_RPS)} req/s) is 3× what the upstream serves (${fmt(CAPACITY_RPS / SLOWDOWN)} req/s): no limiter can make more than about a third of it succeed.\n`,
);
console.log(await runTable({ ...common, ratePerS: 3 * CAPACITY_RPS }));
console.log('\nClient throttling, backend dead (connection refused), 10 clients for 2 s:\n');
console.log(table(['', 'requests made', 'sent to the backend', 'accepted'], await throttling()));
console.log('\nOverhead, per CPU-second:\n');
console.log(table(['', 'acquire + release / s', '× createConcurrencyLimiter'], await overhead()));
