/**
 * The Redis store under load, side by side with rate-limiter-flexible's RateLimiterRedis (a fixed
 * window), both on the same ioredis client and the same redis-server (started here, persistence off):
 *
 * 1. decisions per second and p50/p99 latency at 1, 64 and 512 concurrent callers on one connection,
 *    for every algorithm, with micro-batching on (the default) and, for the fixed window, off;
 * 2. the ceiling: `redis-benchmark -c 50 -P 16` running EVALSHA of each algorithm's own script;
 * 3. Redis memory per key (INFO used_memory delta over 100 000 keys);
 * 4. a flood on one over-limit key: Redis commands per second with the local cache on and off.
 *
 *   node --import tsx bench/redis.ts
 *   BENCH_REDIS_MS=3000 BENCH_REDIS_ROUNDS=5 node --import tsx bench/redis.ts
 *
 * Client, Redis and redis-benchmark share this machine's cores; read the ratios within one run. Each
 * throughput variant is measured ROUNDS times, interleaved with the others (so a burst of background
 * load hits them alike; every other round in reverse order), and the median run is reported; at one
 * caller, in blocks of 100 calls shuffled among the variants (see measureOneCaller).
 */
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { ALGORITHMS, type AlgorithmName, resolvePolicy } from '../packages/sluice/src/core/policy.js';
import { createLimiter } from '../packages/sluice/src/limiter/create-limiter.js';
import { createRedisStore, type RedisStore } from '../packages/sluice/src/stores/redis/index.js';
import { keyIdOf } from '../packages/sluice/src/stores/redis/keys.js';
import { scriptCall } from '../packages/sluice/src/stores/redis/script-args.js';
import { policyScript } from '../packages/sluice/src/stores/redis/scripts.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { fmt, shuffled, table } from './lib/measure.js';

const RUN_MS = Number(process.env.BENCH_REDIS_MS ?? 1500);
/** Each throughput variant is measured this many times, interleaved with the others; medians are reported. */
const ROUNDS = Number(process.env.BENCH_REDIS_ROUNDS ?? 3);
const WARMUP_MS = 300;
const CALLERS = [1, 64, 512];
const KEYS = 10_000;
const MEMORY_KEYS = 100_000;
/** Throughput runs: high enough that nothing is rejected. */
const LIMIT = 1_000_000;
/**
 * The sliding log takes at most 10,000 per period (one entry per request): enough here too, since the
 * runs spread over KEYS keys and reach at most a few hundred requests per key.
 */
const limitOf = (algorithm: AlgorithmName) => (algorithm === 'sliding-log' ? 10_000 : LIMIT);
const PERIOD_MS = 86_400_000;
/** Memory runs: a common policy, with a period long enough that no key expires while we count. */
const MEMORY_LIMIT = 100;

interface Result {
  perSecond: number;
  p50: number;
  p99: number;
  nodeCpu: number;
  redisCpu: number;
}

const server = await startRedis();
const client = new Redis(server.port, '127.0.0.1');
const admin = new Redis(server.port, '127.0.0.1');

async function redisCpuSeconds(): Promise<number> {
  const info = await admin.info('cpu');
  const num = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return num('used_cpu_user') + num('used_cpu_sys');
}

async function commandsProcessed(): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await admin.info('stats'))?.[1] ?? 0);
}

/** `callers` loops, each awaiting `op` one call after another, for RUN_MS after a warm-up. */
async function measure(callers: number, op: (i: number) => Promise<unknown>): Promise<Result> {
  let measuring = false;
  let stop = false;
  const latencies: number[] = [];
  const loop = async (w: number) => {
    for (let i = w, n = 0; !stop; i += callers, n++) {
      const start = performance.now();
      await op(i % KEYS);
      if (measuring) latencies.push(performance.now() - start);
      // Answers from the local cache never leave the microtask queue: let the timers run now and then.
      if (n % 256 === 255) await new Promise((r) => setImmediate(r));
    }
  };
  const loops = Array.from({ length: callers }, (_, w) => loop(w));
  await new Promise((r) => setTimeout(r, WARMUP_MS));
  const redis0 = await redisCpuSeconds();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  measuring = true;
  await new Promise((r) => setTimeout(r, RUN_MS));
  measuring = false;
  const elapsed = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const redis1 = await redisCpuSeconds();
  stop = true;
  await Promise.all(loops);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0;
  return {
    perSecond: (latencies.length / elapsed) * 1000,
    p50: at(0.5),
    p99: at(0.99),
    nodeCpu: ((cpu.user + cpu.system) / 1000 / elapsed) * 100,
    redisCpu: ((redis1 - redis0) * 1000 * 100) / elapsed,
  };
}

/**
 * One caller: every variant in blocks of ONE_CALLER_BLOCK calls, the variants' order shuffled for
 * each round of blocks, until each has run ROUNDS × RUN_MS. At one caller a call is a round trip of
 * about 80 µs, nearly all of it the two processes' system calls, and the machine's speed drifts by
 * more than the variants differ over seconds: blocks of a few milliseconds side by side see the same
 * machine. Latency percentiles are over every call; CPU is the blocks' own.
 */
const ONE_CALLER_BLOCK = 100;
async function measureOneCaller(variants: readonly [string, (i: number) => Promise<unknown>][]) {
  const acc = new Map(
    variants.map(([name]) => [name, { calls: 0, ms: 0, nodeS: 0, redisS: 0, latencies: [] as number[] }]),
  );
  let key = 0;
  for (const [, op] of variants) {
    const until = performance.now() + WARMUP_MS;
    while (performance.now() < until) await op(key++ % KEYS);
  }
  const budget = ROUNDS * RUN_MS;
  while ([...acc.values()].some((a) => a.ms < budget)) {
    const order = shuffled(variants.length).map((i) => variants[i] as (typeof variants)[number]);
    for (const [name, op] of order) {
      const a = acc.get(name);
      if (a === undefined) continue;
      const redis0 = await redisCpuSeconds();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let n = 0; n < ONE_CALLER_BLOCK; n++) {
        const start = performance.now();
        await op(key++ % KEYS);
        a.latencies.push(performance.now() - start);
      }
      a.ms += performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      a.nodeS += (cpu.user + cpu.system) / 1e6;
      a.redisS += (await redisCpuSeconds()) - redis0;
      a.calls += ONE_CALLER_BLOCK;
    }
  }
  const results = new Map<string, Result>();
  for (const [name, a] of acc) {
    a.latencies.sort((x, y) => x - y);
    const at = (q: number) => a.latencies[Math.min(a.latencies.length - 1, Math.floor(a.latencies.length * q))] ?? 0;
    results.set(name, {
      perSecond: (a.calls / a.ms) * 1000,
      p50: at(0.5),
      p99: at(0.99),
      nodeCpu: ((a.nodeS * 1000) / a.ms) * 100,
      redisCpu: ((a.redisS * 1000) / a.ms) * 100,
    });
  }
  return results;
}

function sluiceOp(store: RedisStore, algorithm: AlgorithmName, limit = limitOf(algorithm)) {
  const limiter = createLimiter({ algorithm, limit, period: PERIOD_MS, store });
  return (i: number) => limiter.check(`user:${i}`);
}

function peerOp(points = LIMIT, keyPrefix = 'rlflx') {
  const peer = new RateLimiterRedis({ storeClient: client, points, duration: PERIOD_MS / 1000, keyPrefix });
  return (i: number) => peer.consume(`user:${i}`);
}

// ---------------------------------------------------------------- 2. the ceiling (run first: it is used below)

function redisBenchmark(algorithm: AlgorithmName): number {
  const p = resolvePolicy({ algorithm, limit: limitOf(algorithm), period: PERIOD_MS });
  // The script the store sends a lone check of this policy to: the policy's own (policy-scripts.ts).
  const script = policyScript(p);
  const args = ['-p', String(server.port), '-c', '50', '-P', '16', '-n', '400000', '-r', String(KEYS), '--csv'];
  const tag = 'sluice:{user:__rand_int__}';
  // One check, exactly as the store sends it: server clock, no grace, the usual item (commit, cost 1).
  const item = { key: `${tag}:${keyIdOf(p)}`, bkey: `${tag}!${keyIdOf(p)}`, policy: p, fields: ['1', '1'] };
  args.push(...scriptCall(script, ['', '0'], [item], true, p));
  const run = spawnSync('redis-benchmark', args, { encoding: 'utf8' });
  const last = run.stdout.trim().split('\n').pop() ?? '';
  const rps = Number(last.split(',')[1]?.replace(/"/g, ''));
  if (!Number.isFinite(rps)) throw new Error(`redis-benchmark failed: ${run.stdout} ${run.stderr}`);
  return rps;
}

await client.flushall();
for (const algorithm of ALGORITHMS) {
  await client.script(
    'LOAD',
    policyScript(resolvePolicy({ algorithm, limit: limitOf(algorithm), period: PERIOD_MS })).source,
  );
}
const ceiling = new Map<AlgorithmName, number>();
for (const algorithm of ALGORITHMS) ceiling.set(algorithm, redisBenchmark(algorithm));

// ---------------------------------------------------------------- 1. throughput and latency

const batched = createRedisStore({ client });
const unbatched = createRedisStore({ client, batch: false });
const rows: (string | number)[][] = [];
const at64 = new Map<string, Result>();
const PEER = 'rate-limiter-flexible (fixed window)';
const variants: [string, (i: number) => Promise<unknown>][] = [
  ...ALGORITHMS.map((a): [string, (i: number) => Promise<unknown>] => [a, sluiceOp(batched, a)]),
  ['fixed-window, batch: false', sluiceOp(unbatched, 'fixed-window')],
  [PEER, peerOp()],
];
const median = (rs: Result[]) => [...rs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(rs.length / 2)] as Result;
for (const callers of CALLERS) {
  await client.flushall();
  const runs = new Map<string, Result[]>(variants.map(([name]) => [name, []]));
  if (callers === 1) {
    for (const [name, r] of await measureOneCaller(variants)) runs.set(name, [r]);
  } else {
    for (let round = 0; round < ROUNDS; round++) {
      // Every other round in reverse: no variant always runs first (on keys the block has not warmed yet).
      for (const [name, op] of round % 2 === 0 ? variants : [...variants].reverse()) {
        runs.get(name)?.push(await measure(callers, op));
      }
    }
  }
  const peer = median(runs.get(PEER) ?? []);
  for (const [name] of variants) {
    const r = median(runs.get(name) ?? []);
    if (callers === 64) at64.set(name, r);
    const algorithm = name.split(',')[0] as AlgorithmName;
    const ceil = name === PEER ? undefined : ceiling.get(algorithm);
    rows.push([
      callers,
      name,
      fmt(r.perSecond),
      fmt(r.p50, 2),
      fmt(r.p99, 2),
      `${fmt(r.perSecond / peer.perSecond, 2)}×`,
      ceil === undefined ? '–' : `${fmt((r.perSecond / ceil) * 100)}%`,
      `${fmt(r.nodeCpu)}% / ${fmt(r.redisCpu)}%`,
    ]);
  }
}

// ---------------------------------------------------------------- 3. memory per key

async function bytesPerKey(op: (i: number) => Promise<unknown>): Promise<number> {
  await client.flushall();
  await new Promise((r) => setTimeout(r, 100));
  const used = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1] ?? 0);
  const before = await used();
  const inFlight = 512;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, w) => {
      for (let i = w; i < MEMORY_KEYS; i += inFlight) await op(i);
    }),
  );
  return ((await used()) - before) / MEMORY_KEYS;
}

const memoryRows: (string | number)[][] = [];
const peerBytes = await bytesPerKey(peerOp(MEMORY_LIMIT));
const sampleKey = (algorithm: AlgorithmName) =>
  `sluice:{user:12345}:${keyIdOf(resolvePolicy({ algorithm, limit: MEMORY_LIMIT, period: PERIOD_MS }))}`;
for (const algorithm of ALGORITHMS) {
  const bytes = await bytesPerKey(sluiceOp(batched, algorithm, MEMORY_LIMIT));
  memoryRows.push([algorithm, `\`${sampleKey(algorithm)}\``, fmt(bytes), `${fmt(bytes / peerBytes, 2)}×`]);
}
memoryRows.push(['rate-limiter-flexible (fixed window)', '`rlflx:user:12345`', fmt(peerBytes), '1.00×']);
// The same counter under a key name as long as sluice's fixed-window one: what the name costs.
const longPrefix = 'r'.repeat(sampleKey('fixed-window').length - 'rlflx:user:12345'.length + 'rlflx'.length);
const peerLong = await bytesPerKey(peerOp(MEMORY_LIMIT, longPrefix));
memoryRows.push([
  'rate-limiter-flexible, key name as long as sluice fixed-window',
  `\`${longPrefix}:user:12345\``,
  fmt(peerLong),
  `${fmt(peerLong / peerBytes, 2)}×`,
]);

// ---------------------------------------------------------------- 4. flood on one over-limit key

async function flood(name: string, op: () => Promise<unknown>): Promise<(string | number)[]> {
  await op().catch(() => undefined);
  const c0 = await commandsProcessed();
  const r = await measure(64, () => op().catch(() => undefined));
  const c1 = await commandsProcessed();
  // Minus the INFO calls measure() itself makes.
  const perSecond = ((c1 - c0 - 4) / (RUN_MS + WARMUP_MS)) * 1000;
  return [name, fmt(r.perSecond), fmt(Math.max(0, perSecond)), `${fmt(r.nodeCpu)}% / ${fmt(r.redisCpu)}%`];
}

await client.flushall();
const floodRows: (string | number)[][] = [];
for (const localCache of [true, false]) {
  const store = createRedisStore({ client, localCache, prefix: `flood-${localCache}:` });
  const limiter = createLimiter({ limit: 10, period: '1h', store });
  for (let i = 0; i < 10; i++) await limiter.check('attacker');
  floodRows.push(await flood(`sluice, localCache: ${localCache}`, () => limiter.check('attacker')));
  const stats = store.stats();
  floodRows.at(-1)?.push(`${fmt(stats.localCacheHits)} of ${fmt(stats.decisions)}`);
}
for (const inMemoryBlockOnConsumed of [0, 10]) {
  const peer = new RateLimiterRedis({
    storeClient: client,
    points: 10,
    duration: 3600,
    keyPrefix: `flood-peer-${inMemoryBlockOnConsumed}`,
    ...(inMemoryBlockOnConsumed > 0 ? { inMemoryBlockOnConsumed, inMemoryBlockDuration: 3600 } : {}),
  });
  for (let i = 0; i < 10; i++) await peer.consume('attacker');
  const label = `rate-limiter-flexible${inMemoryBlockOnConsumed > 0 ? ', inMemoryBlockOnConsumed: 10' : ''}`;
  floodRows.push([...(await flood(label, () => peer.consume('attacker'))), '–']);
}

// ---------------------------------------------------------------- report

const peer64 = at64.get(PEER);
const fw64 = at64.get('fixed-window');
console.log(
  `Redis ${(await admin.info('server')).match(/redis_version:([\d.]+)/)?.[1]}, ${cpus().length} cores, ` +
    `one caller: ${ROUNDS * RUN_MS} ms per variant in interleaved blocks of ${ONE_CALLER_BLOCK} calls; more callers: ` +
    `median of ${ROUNDS} interleaved runs of ${RUN_MS} ms; ${KEYS} keys, one ioredis connection shared by every ` +
    `variant; policy ${LIMIT} per day, the sliding log ${limitOf('sliding-log')} (nothing rejected).\n`,
);
console.log('### Decisions per second and latency (ms)\n');
console.log(
  table(
    [
      'callers',
      'limiter',
      'decisions/s',
      'p50',
      'p99',
      'vs rate-limiter-flexible',
      'vs own script ceiling',
      'CPU node / redis',
    ],
    rows,
  ),
);
if (peer64 && fw64) {
  console.log(
    `\nAt 64 callers: sluice fixed-window ${fmt(fw64.perSecond / peer64.perSecond, 2)}× rate-limiter-flexible's ` +
      `decisions/s, p99 ${fmt(fw64.p99, 2)} ms vs ${fmt(peer64.p99, 2)} ms.`,
  );
}
console.log('\n### Ceiling: `redis-benchmark -c 50 -P 16` running EVALSHA of each script (one check per call)\n');
console.log(
  table(
    ['algorithm', 'scripts/s', 'sluice at 64 callers', 'ratio'],
    ALGORITHMS.map((a) => {
      const c = ceiling.get(a) ?? 0;
      const s = at64.get(a)?.perSecond ?? 0;
      return [a, fmt(c), fmt(s), `${fmt((s / c) * 100)}%`];
    }),
  ),
);
console.log(`\n### Redis memory per key (used_memory delta over ${fmt(MEMORY_KEYS)} keys)\n`);
console.log(
  `Policy: ${MEMORY_LIMIT} per day, one request per key, keys \`user:0\` … \`user:99999\`, default key prefixes.\n`,
);
console.log(table(['limiter', 'key name', 'bytes/key', 'vs rate-limiter-flexible'], memoryRows));
console.log('\n### Flood on one over-limit key (64 callers)\n');
console.log(
  table(['limiter', 'decisions/s', 'Redis commands/s', 'CPU node / redis', 'answered by the local cache'], floodRows),
);

await batched.close();
await unbatched.close();
client.disconnect();
admin.disconnect();
await server.stop();
