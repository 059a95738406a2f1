/**
 * The remote store (`sluice/remote`, asking a local `sluice serve` over HTTP) beside the Redis store
 * (ioredis, a local redis-server), from one Node process, in the same run: decisions per second and
 * p50/p99 latency at 1 and 64 concurrent callers, with batching on (the default) and off.
 *
 *   node --import tsx bench/remote.ts
 *   BENCH_REMOTE_MS=5000 node --import tsx bench/remote.ts
 *
 * The service (its own process, memory store), Redis and this process share the machine's cores: read
 * the ratios within one run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { createLimiter } from '../packages/sluice/src/limiter/create-limiter.js';
import { createRedisStore } from '../packages/sluice/src/stores/redis/index.js';
import { createRemoteStore } from '../packages/sluice/src/stores/remote/index.js';
import type { Store } from '../packages/sluice/src/stores/store.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { fmt, table } from './lib/measure.js';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = import.meta.url.endsWith('.ts')
  ? ['--import', 'tsx', resolve(ROOT, 'packages/server/src/cli/main.ts')]
  : [resolve(ROOT, 'packages/server/src/cli/main.js')];
const RUN_MS = Number(process.env.BENCH_REMOTE_MS ?? 3000);
const WARMUP_MS = 500;
const KEYS = 10_000;

interface Result {
  perSecond: number;
  p50: number;
  p99: number;
}

/** `callers` loops, each awaiting one check after another, for RUN_MS after a warm-up. */
async function measure(store: Store, callers: number): Promise<Result> {
  const limiter = createLimiter({ limit: 1_000_000_000, period: '1d', store });
  let measuring = false;
  let stop = false;
  const latencies: number[] = [];
  const loop = async (w: number) => {
    for (let i = w; !stop; i += callers) {
      const start = performance.now();
      await limiter.check(`user:${i % KEYS}`);
      if (measuring) latencies.push(performance.now() - start);
    }
  };
  const loops = Array.from({ length: callers }, (_, w) => loop(w));
  await new Promise((r) => setTimeout(r, WARMUP_MS));
  const t0 = performance.now();
  measuring = true;
  await new Promise((r) => setTimeout(r, RUN_MS));
  measuring = false;
  const elapsed = performance.now() - t0;
  stop = true;
  await Promise.all(loops);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0;
  return { perSecond: (latencies.length / elapsed) * 1000, p50: at(0.5), p99: at(0.99) };
}

function startService(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [...CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', '--log-level', 'info'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  return new Promise((done, fail) => {
    let out = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) done({ url: `http://127.0.0.1:${(JSON.parse(line) as { http: number }).http}`, child });
    });
    child.once('exit', (code) => fail(new Error(`sluice serve exited ${code}`)));
  });
}

const redis = await startRedis();
const client = new Redis(redis.port, '127.0.0.1');
const service = await startService();
service.child.stdout?.resume();

const variants: [string, () => Store & { stats(): object }][] = [
  ['remote (batched)', () => createRemoteStore({ url: service.url, timeoutMs: 5000 })],
  ['remote, batch: false', () => createRemoteStore({ url: service.url, timeoutMs: 5000, batch: false })],
  ['redis (ioredis)', () => createRedisStore({ client, timeoutMs: 5000 })],
];
// Warm both servers up first (the service's JIT above all), so the first row is not charged for it.
for (const [, make] of variants) {
  const store = make();
  await measure(store, 64);
  await store.close();
}
const rows: (string | number)[][] = [];
for (const callers of [1, 64]) {
  for (const [name, make] of variants) {
    const store = make();
    const r = await measure(store, callers);
    const stats = store.stats() as { requests?: number; operations?: number };
    const perRequest = stats.requests ? fmt((stats.operations ?? 0) / stats.requests, 1) : '—';
    rows.push([name, callers, fmt(r.perSecond), fmt(r.p50, 2), fmt(r.p99, 2), perRequest]);
    await store.close();
  }
}
console.log(table(['store', 'callers', 'decisions/s', 'p50 ms', 'p99 ms', 'checks per HTTP request'], rows));
client.disconnect();
service.child.kill('SIGTERM');
await redis.stop();
