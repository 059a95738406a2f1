/**
 * Three regions on one machine — a redis-server each, 50 ms one way between them (delaying TCP
 * proxies, test/helpers/delay-proxy.ts) — and, in the same run:
 *
 * 1. decision latency p50/p99 from one region: the single-region Redis store (the floor), the
 *    multi-region store in both modes, and a write-to-every-region baseline in the manner of
 *    @upstash/ratelimit's MultiRegionRatelimit (every request written to every region's Redis, the
 *    answer taken from the first reply); plus each one's Redis time per decision in eu's
 *    redis-server (INFO commandstats) and the commands it sends across regions;
 * 2. eventual mode's over-admission per window at sync intervals of 100 ms, 1 s and 10 s under even
 *    load, beside the bound it states and beside the baseline under the same load;
 * 3. escrow's under-admission under a load that moves from region to region;
 * 4. propagation time: from an admission to every other region counting it.
 *
 *   npm run bench -- multi-region
 *   BENCH_MR_WINDOWS=2 node --import tsx bench/multi-region.ts     # shorter
 *   BENCH_MR_ONLY=latency node --import tsx bench/multi-region.ts  # part 1 only
 *
 * The delaying proxies run in a child process (the network is not in the application's process);
 * the Redis servers and this process share the machine's cores: read the numbers side by side.
 */
import { Redis } from 'ioredis';
import { type PolicyOptions, resolvePolicy } from '../packages/sluice/src/core/policy.js';
import { createMultiRegionStore, type MultiRegionStore } from '../packages/sluice/src/stores/multi-region/index.js';
import { createRedisStore } from '../packages/sluice/src/stores/redis/index.js';
import type { Store } from '../packages/sluice/src/stores/store.js';
import { startDelayProxyProcess } from '../test/helpers/delay-proxy.js';
import { type RedisServerHandle, startRedis } from '../test/helpers/redis-server.js';
import { fmt, table } from './lib/measure.js';

const REGIONS = ['eu', 'us', 'ap'] as const;
type Region = (typeof REGIONS)[number];
const ONE_WAY_MS = 50;
const WINDOWS = Number(process.env.BENCH_MR_WINDOWS ?? 4);
/** `latency`: only part 1 (the decision latency), half a minute instead of several. */
const ONLY = process.env.BENCH_MR_ONLY;
/** Part 1: blocks per store, their length (ms), and the multi-region stores' sync interval. */
const PASSES = Number(process.env.BENCH_MR_PASSES ?? 4);
const BLOCK_MS = Number(process.env.BENCH_MR_BLOCK_MS ?? 1500);
const SYNC_MS = 1000;
/** Part 1's second table: decisions per second offered at a steady rate. */
const STEADY_RATE = Number(process.env.BENCH_MR_STEADY_RATE ?? 10_000);

// ---- topology

const servers = {} as Record<Region, RedisServerHandle>;
for (const r of REGIONS) servers[r] = await startRedis();
// The links in a process of their own: the network is not in the application's process, and bytes
// forwarded on this event loop would delay the decisions being measured.
const links = await startDelayProxyProcess();
/** Clients as seen from `from`: its own Redis directly, the others through a 50 ms link. */
async function clientsFrom(from: Region): Promise<Record<Region, Redis>> {
  const out = {} as Record<Region, Redis>;
  for (const to of REGIONS) {
    let port = servers[to].port;
    if (to !== from) {
      port = (await links.start(port, ONE_WAY_MS)).port;
    }
    out[to] = new Redis(port, '127.0.0.1');
  }
  return out;
}
const clients = {} as Record<Region, Record<Region, Redis>>;
for (const r of REGIONS) clients[r] = await clientsFrom(r);

function multi(region: Region, mode: 'eventual' | 'escrow', syncIntervalMs: number, prefix: string): MultiRegionStore {
  return createMultiRegionStore({ region, regions: clients[region], mode, syncIntervalMs, prefix, timeoutMs: 2000 });
}

// ---- the baseline: write to every region, answer from the first reply (Upstash's MultiRegionRatelimit)

/** Fixed window, a set of request ids per window in every region; allowed iff the set had room. */
const UPSTASH_LUA = `
local n = redis.call('SCARD', KEYS[1])
if n >= tonumber(ARGV[1]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;
let upstashSeq = 0;
let upstashRemoteCommands = 0;
/** One decision of the baseline, from `region`: all regions written, the first answer wins. */
function upstashCheck(region: Region, key: string, limit: number, periodMs: number, now: number): Promise<boolean> {
  const w = Math.floor(now / periodMs);
  const id = `${region}-${++upstashSeq}`;
  const sends = REGIONS.map((to) => {
    if (to !== region) upstashRemoteCommands++;
    return clients[region][to]
      .eval(UPSTASH_LUA, 1, `up:{${key}}:${w}`, limit, id, periodMs * 2)
      .then((r) => Number(r) === 1);
  });
  return Promise.any(sends);
}

// ---- measuring

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/** `n` decisions from eu (or as many as `forMs` allows), 8 at a time: latencies in ms. */
async function latencies(n: number, decide: (i: number) => Promise<unknown>, forMs = Infinity): Promise<number[]> {
  const out: number[] = [];
  let next = 0;
  const end = performance.now() + forMs;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < n && performance.now() < end) {
        const i = next++;
        const t = performance.now();
        await decide(i);
        out.push(performance.now() - t);
      }
    }),
  );
  return out.sort((a, b) => a - b);
}

/**
 * Decisions offered at a steady `perSecond` for `forMs` (open loop: each one sent when due, whether or
 * not earlier ones were answered, as requests reach a server), 8 callers' worth of keys: latencies in ms.
 */
async function steadyLatencies(perSecond: number, decide: (i: number) => Promise<unknown>, forMs: number) {
  const out: number[] = [];
  const answers: Promise<void>[] = [];
  const start = performance.now();
  let sent = 0;
  while (performance.now() - start < forMs) {
    const due = Math.floor(((performance.now() - start) * perSecond) / 1000);
    for (; sent < due; sent++) {
      const t = performance.now();
      answers.push(decide(sent).then(() => void out.push(performance.now() - t)));
    }
    // Yield to I/O (answers), then send what came due meanwhile.
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(answers);
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Offers `ratePerSecond(region, elapsedMs)` requests per second from each region for `durationMs`
 * (spread evenly), each decided by `decide`; returns the instants of the admissions.
 */
async function offer(
  durationMs: number,
  ratePerSecond: (region: Region, elapsedMs: number) => number,
  decide: (region: Region, now: number) => Promise<boolean>,
): Promise<{ t: number; region: Region }[]> {
  const admitted: { t: number; region: Region }[] = [];
  const start = Date.now();
  const owed = { eu: 0, us: 0, ap: 0 } as Record<Region, number>;
  const pending: Promise<void>[] = [];
  let last = start;
  while (Date.now() - start < durationMs) {
    const now = Date.now();
    for (const r of REGIONS) {
      owed[r] += (ratePerSecond(r, now - start) * (now - last)) / 1000;
      while (owed[r] >= 1) {
        owed[r]--;
        pending.push(
          decide(r, now).then((ok) => {
            if (ok) admitted.push({ t: now, region: r });
          }),
        );
      }
    }
    last = now;
    await sleep(5);
  }
  await Promise.all(pending);
  return admitted.sort((a, b) => a.t - b.t);
}

/** Admissions per window, only the windows the run covered whole. */
function perWindow(admitted: readonly { t: number }[], periodMs: number, from: number, to: number): number[] {
  const counts = new Map<number, number>();
  for (const a of admitted) counts.set(Math.floor(a.t / periodMs), (counts.get(Math.floor(a.t / periodMs)) ?? 0) + 1);
  const out: number[] = [];
  for (let w = Math.ceil(from / periodMs); (w + 1) * periodMs <= to; w++) out.push(counts.get(w) ?? 0);
  return out;
}

/** Waits until the next window of `periodMs` starts (so runs cover whole windows). */
const untilNextWindow = (periodMs: number) => sleep(periodMs - (Date.now() % periodMs) + 5);

// ---- 1. decision latency

/** Microseconds eu's redis-server spent in commands so far (INFO commandstats, every command). */
async function redisMicros(): Promise<number> {
  const info = String(await clients.eu.eu.info('commandstats'));
  let us = 0;
  for (const m of info.matchAll(/,usec=(\d+),/g)) us += Number(m[1]);
  return us;
}

{
  const p = resolvePolicy({ algorithm: 'fixed-window', limit: 1_000_000, period: 60_000 });
  const single = createRedisStore({ client: clients.eu.eu, clock: 'client', timeoutMs: 2000 });
  const eventual = multi('eu', 'eventual', SYNC_MS, 'lat:ev:');
  const escrow = multi('eu', 'escrow', SYNC_MS, 'lat:es:');
  type Variant = {
    label: string;
    decide: (i: number) => Promise<unknown>;
    remote: () => number;
    store?: MultiRegionStore;
    ls: number[];
    redisUs: number;
    remoteCommands: number;
  };
  const pushes = (s: MultiRegionStore) => () => s.syncStatus().reduce((n, x) => n + x.pushes, 0);
  const check = (s: Store) => (i: number) => s.check(`k${i % 500}`, p, 1, Date.now(), true) as Promise<unknown>;
  const variant = (label: string, decide: Variant['decide'], remote: () => number, store?: MultiRegionStore) =>
    ({ label, decide, remote, store, ls: [], redisUs: 0, remoteCommands: 0 }) as Variant;
  const variants = [
    variant('single-region Redis store (eu only)', check(single), () => 0),
    variant('multi-region eventual', check(eventual), pushes(eventual), eventual),
    variant('multi-region escrow', check(escrow), pushes(escrow), escrow),
    variant(
      'write to every region, first reply (Upstash-style)',
      (i) => upstashCheck('eu', `k${i % 500}`, 1_000_000, 60_000, Date.now()),
      () => upstashRemoteCommands,
    ),
  ];
  for (const v of variants) {
    await latencies(500, v.decide); // warm up: connections, scripts, every key's state
    await v.store?.sync();
  }
  // Blocks of BLOCK_MS per variant, in turn, PASSES times: load from the rest of the machine hits every
  // variant alike, and each multi-region block is long enough to hold its own syncs (what is still
  // pending at its end is flushed before the next block, so no variant pays for another's sync).
  for (let pass = 0; pass < PASSES; pass++) {
    for (const v of pass % 2 === 0 ? variants : [...variants].reverse()) {
      const before = v.remote();
      const usec = await redisMicros();
      const ls = await latencies(Number.POSITIVE_INFINITY, v.decide, BLOCK_MS);
      v.redisUs += (await redisMicros()) - usec;
      v.remoteCommands += v.remote() - before;
      for (const l of ls) v.ls.push(l);
      await v.store?.sync();
    }
  }
  /** A row's first cells: the store, how many decisions, their p50 and p99. */
  const latencyCells = (label: string, ls: number[]) => {
    ls.sort((a, b) => a - b);
    return [label, fmt(ls.length), fmt(percentile(ls, 50), 2), fmt(percentile(ls, 99), 2)];
  };
  const saturated = variants.map((v) => {
    const ls = v.ls;
    return [...latencyCells(v.label, ls), fmt(v.redisUs / ls.length, 1), fmt((1000 * v.remoteCommands) / ls.length, 2)];
  });
  console.log(
    `### Decision latency from eu, 8 concurrent callers, ${PASSES} blocks of ${BLOCK_MS} ms per store in turn (ms), sync every ${SYNC_MS} ms\n`,
  );
  console.log(
    table(
      [
        'store',
        'decisions',
        'p50',
        'p99',
        'eu Redis µs per decision (all commands, syncs included)',
        'cross-region commands per 1,000 decisions (sync pushes; the baseline: its writes)',
      ],
      saturated,
    ),
  );
  // The same stores at a steady rate well below what they can do: the latency a request sees in a
  // server that is not saturated, syncs included (each block holds one).
  const steady = variants.map((v) => ({ label: v.label, ls: [] as number[], blocks: [] as number[] }));
  for (let pass = 0; pass < PASSES; pass++) {
    const order = pass % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) {
      const ls = await steadyLatencies(STEADY_RATE, v.decide, BLOCK_MS);
      const row = steady[variants.indexOf(v)] as (typeof steady)[number];
      for (const l of ls) row.ls.push(l);
      row.blocks.push(
        percentile(
          ls.sort((a, b) => a - b),
          99,
        ),
      );
      await v.store?.sync();
    }
  }
  console.log(
    `\n### Decision latency from eu at a steady ${fmt(STEADY_RATE)} decisions/s (open loop), ${PASSES} blocks of ${BLOCK_MS} ms per store in turn (ms), sync every ${SYNC_MS} ms\n`,
  );
  console.log(
    table(
      ['store', 'decisions', 'p50', 'p99', 'p99 of each block'],
      steady.map((r) => [...latencyCells(r.label, r.ls), r.blocks.map((x) => fmt(x, 2)).join(', ')]),
    ),
  );
  await Promise.all([single.close(), eventual.close(), escrow.close()]);
}

// ---- 2 & 4. eventual: over-admission per window, and propagation, at three sync intervals

if (ONLY !== 'latency') {
  const LIMIT = 100;
  const PERIOD = 10_000;
  const policy: PolicyOptions = { algorithm: 'fixed-window', limit: LIMIT, period: PERIOD };
  const p = resolvePolicy(policy);
  // Twice the limit offered, evenly: each region alone would stay under the limit.
  const rate = (2 * LIMIT * 1000) / PERIOD / REGIONS.length;
  const rows: (string | number)[][] = [];
  for (const syncMs of [100, 1000, 10_000]) {
    const stores = Object.fromEntries(REGIONS.map((r) => [r, multi(r, 'eventual', syncMs, `ov${syncMs}:`)])) as Record<
      Region,
      MultiRegionStore
    >;
    await untilNextWindow(PERIOD);
    const from = Date.now();
    const admitted = await offer(
      WINDOWS * PERIOD,
      () => rate,
      async (r, now) => (await stores[r].check('k', p, 1, now, true)).allowed,
    );
    const counts = perWindow(admitted, PERIOD, from, Date.now());
    const over = counts.map((n) => Math.max(0, n - LIMIT));
    const lags = REGIONS.flatMap((r) => stores[r].syncStatus().map((s) => s.maxLagMs));
    // R of the bound: what the other two regions admitted per second (even load: two thirds of it).
    const meanAdmitted = counts.reduce((a, b) => a + b, 0) / Math.max(1, counts.length);
    const bound = stores.eu.bound(policy, { ratePerSecond: ((2 / 3) * meanAdmitted * 1000) / PERIOD });
    rows.push([
      `eventual, sync ${fmt(syncMs)} ms`,
      counts.join(', '),
      fmt(Math.max(...over)),
      fmt(over.reduce((a, b) => a + b, 0) / Math.max(1, over.length), 1),
      `${fmt(bound.maxPerWindow)} (Δ ${fmt(bound.lagMs)} ms)`,
      fmt(Math.max(...lags)),
    ]);
    for (const s of Object.values(stores)) await s.close();
  }
  {
    await untilNextWindow(PERIOD);
    const from = Date.now();
    const admitted = await offer(
      WINDOWS * PERIOD,
      () => rate,
      (r, now) => upstashCheck(r, 'ov-up', LIMIT, PERIOD, now),
    );
    const counts = perWindow(admitted, PERIOD, from, Date.now());
    const over = counts.map((n) => Math.max(0, n - LIMIT));
    rows.push([
      'write to every region, first reply (Upstash-style)',
      counts.join(', '),
      fmt(Math.max(...over)),
      fmt(over.reduce((a, b) => a + b, 0) / Math.max(1, over.length), 1),
      'none stated',
      `${ONE_WAY_MS} (one way)`,
    ]);
  }
  console.log(
    `\n### Over-admission per window: limit ${LIMIT} per ${PERIOD / 1000} s, fixed window, ${fmt(2 * LIMIT)} offered per window evenly over 3 regions\n`,
  );
  console.log(
    table(
      ['store', 'admitted per window', 'max over', 'mean over', 'stated bound per window', 'propagation, max (ms)'],
      rows,
    ),
  );
}

// ---- 3. escrow: under-admission while the load moves

if (ONLY !== 'latency') {
  const LIMIT = 50;
  const PERIOD = 2000;
  const rows: (string | number)[][] = [];
  for (const algorithm of ['fixed-window', 'token-bucket'] as const) {
    const policy = resolvePolicy({ algorithm, limit: LIMIT, period: PERIOD });
    const stores = Object.fromEntries(REGIONS.map((r) => [r, multi(r, 'escrow', 200, `mv:${algorithm}:`)])) as Record<
      Region,
      MultiRegionStore
    >;
    const phaseMs = 3 * PERIOD;
    // Twice the limit, all from one region, moving eu → us → ap every three windows.
    const where = (elapsed: number) => REGIONS[Math.min(2, Math.floor(elapsed / phaseMs))] as Region;
    await untilNextWindow(PERIOD);
    const from = Date.now();
    const admitted = await offer(
      3 * phaseMs,
      (r, elapsed) => (r === where(elapsed) ? (2 * LIMIT * 1000) / PERIOD : 0),
      async (r, now) => (await stores[r].check('k', policy, 1, now, true)).allowed,
    );
    const counts = perWindow(admitted, PERIOD, from, Date.now());
    const used = counts.map((n) => n / LIMIT);
    rows.push([
      `escrow ${algorithm}`,
      counts.join(', '),
      `${fmt(100 * Math.min(...used))} %`,
      `${fmt((100 * used.reduce((a, b) => a + b, 0)) / used.length)} %`,
      fmt(Math.max(...counts)),
    ]);
    for (const s of Object.values(stores)) await s.close();
  }
  console.log(
    `\n### Escrow under a moving load: limit ${LIMIT} per ${PERIOD / 1000} s, twice that offered from one region at a time (eu → us → ap every 3 windows), sync 200 ms\n`,
  );
  console.log(
    table(
      ['store', 'admitted per window', 'worst window (of the limit)', 'mean (of the limit)', 'most in a window'],
      rows,
    ),
  );
  console.log('\n(A single-region store with all traffic in one place admits exactly the limit per window: 100 %.)');
}

for (const r of REGIONS) for (const c of Object.values(clients[r])) c.disconnect();
await links.close();
await Promise.all(Object.values(servers).map((s) => s.stop()));
