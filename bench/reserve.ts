/**
 * Reservations on Redis (issue 40): what `limiter.reserve` and its settle cost, and what the debt buys.
 *
 * 1. Round trips per operation, counted by Redis (INFO commandstats: script calls) and by the store (commands
 *    sent): reserve, settle under, settle over (the charge, on every limit at once), cancel — one limit and two,
 *    and with the records in Redis (`reservationStore`).
 * 2. Throughput and latency of reserve + settle pairs against plain checks, 64 callers on one connection.
 * 3. What the debt buys: one key, requests reserving 100 tokens and using 0–300, against 10,000 a minute (a sliding
 *    log: exact) over ten simulated minutes (injected time): the most tokens used in any minute with the debt, and
 *    with the extra dropped when it does not fit (the behaviour before).
 *
 *   node --import tsx bench/reserve.ts        (or npm run bench -- reserve)
 *
 * Client and Redis share this machine's cores, and the machine is shared: read throughput as ratios within a run.
 */
import { Redis } from 'ioredis';
import { createManualClock } from '../packages/sluice/src/core/clock.js';
import { createLimiter, type Limiter } from '../packages/sluice/src/limiter/create-limiter.js';
import {
  createRedisReservationRecords,
  createRedisStore,
  type RedisStore,
} from '../packages/sluice/src/stores/redis/index.js';
import type { Store } from '../packages/sluice/src/stores/store.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { fmt, table } from './lib/measure.js';

const RUN_MS = Number(process.env.BENCH_RESERVE_MS ?? 1500);
const CALLERS = 64;

const server = await startRedis();
const client = new Redis(server.port, '127.0.0.1');
const admin = new Redis(server.port, '127.0.0.1');
const store = createRedisStore({ client, clock: 'client', timeoutMs: 5000 });
await store.ready();
let named = 0;

/** Script calls Redis has run (EVALSHA and EVAL). */
async function scriptCalls(): Promise<number> {
  const info = await admin.info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)) n += Number(m[2]);
  return n;
}

function limiterOf(on: Store, limits: 1 | 2, records: boolean, clock = createManualClock(1_700_000_000_000)): Limiter {
  const name = `bench${++named}`;
  const minute = { name: 'minute', algorithm: 'token-bucket' as const, limit: 10_000, period: '1m' };
  const day = { name: 'day', algorithm: 'fixed-window' as const, limit: 1_000_000, period: '1d' };
  return createLimiter({
    name,
    limits: limits === 1 ? [minute] : [minute, day],
    store: on,
    clock,
    ...(records ? { reservationStore: createRedisReservationRecords({ client, name }) } : {}),
  });
}

/** Round trips of each operation: script calls Redis ran, commands the store sent. */
async function roundTrips(): Promise<string[][]> {
  const rows: string[][] = [];
  for (const [limits, records] of [
    [1, false],
    [2, false],
    [2, true],
  ] as const) {
    const limiter = limiterOf(store, limits, records);
    const count = async (work: () => Promise<unknown>) => {
      const [s0, c0] = [await scriptCalls(), (store as RedisStore).stats().commands];
      await work();
      return `${(await scriptCalls()) - s0} / ${(store as RedisStore).stats().commands - c0}`;
    };
    let id = '';
    const reserve = await count(async () => {
      id = (await limiter.reserve('k', { cost: 100 })).id;
    });
    const under = await count(() => limiter.settle(id, 40));
    id = (await limiter.reserve('k', { cost: 100 })).id;
    const over = await count(() => limiter.settle(id, 250));
    id = (await limiter.reserve('k', { cost: 100 })).id;
    const cancel = await count(() => limiter.cancel(id));
    rows.push([
      `${limits} limit${limits === 1 ? '' : 's'}${records ? ', records in Redis' : ''}`,
      reserve,
      under,
      over,
      cancel,
    ]);
  }
  return rows;
}

/** Operations per second and latency percentiles of `op` run by CALLERS callers for RUN_MS. */
async function throughput(op: (i: number) => Promise<unknown>): Promise<[number, number, number]> {
  const latencies: number[] = [];
  const end = performance.now() + RUN_MS;
  let i = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await op(i++);
        latencies.push(performance.now() - t);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return [(latencies.length * 1000) / RUN_MS, at(0.5), at(0.99)];
}

/** The most tokens used in any window of one minute, with and without debt (injected time). */
async function overshoot(withDebt: boolean): Promise<{ worst: number; requests: number }> {
  const clock = createManualClock(1_700_000_000_000);
  // Without debt: the store as it was, with no charge (the settle takes the extra only while it fits).
  const { charge: _charge, ...withoutCharge } = store;
  const on: Store = withDebt ? store : withoutCharge;
  const limiter = createLimiter({
    name: `over${++named}`,
    // The sliding log: exact, no window of a minute admits past the limit — so what is over is the settles'.
    algorithm: 'sliding-log',
    limit: 10_000,
    period: '1m',
    store: on,
    clock,
  });
  let seed = 7;
  const rand = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const used: [number, number][] = [];
  let requests = 0;
  for (let t = 0; t < 600_000; t += 50) {
    clock.set(1_700_000_000_000 + t);
    const r = await limiter.reserve('key', { cost: 100 });
    if (!r.allowed) continue;
    requests++;
    const actual = Math.floor(rand() * 301);
    await r.settle(actual);
    used.push([t, actual]);
  }
  let worst = 0;
  let sum = 0;
  let from = 0;
  for (const [t, n] of used) {
    sum += n;
    while ((used[from] as [number, number])[0] <= t - 60_000) sum -= (used[from++] as [number, number])[1];
    worst = Math.max(worst, sum);
  }
  return { worst, requests };
}

try {
  console.log('Round trips per operation on Redis (script calls Redis ran / commands the store sent):\n');
  console.log(table(['limiter', 'reserve', 'settle under', 'settle over (charge)', 'cancel'], await roundTrips()));

  const limiter = limiterOf(store, 2, false, { now: () => Date.now() } as never);
  const check = await throughput((i) => limiter.check(`c${i % 1000}`, { cost: 1 }));
  const pair = await throughput(async (i) => {
    const r = await limiter.reserve(`r${i % 1000}`, { cost: 1 });
    if (r.allowed) await r.settle(i % 3);
  });
  console.log(`\nThroughput, two limits, ${CALLERS} callers on one connection, ${RUN_MS} ms each (noisy machine):\n`);
  console.log(
    table(
      ['operation', 'per second', 'p50 ms', 'p99 ms'],
      [
        ['check', fmt(check[0]), fmt(check[1], 2), fmt(check[2], 2)],
        ['reserve + settle', fmt(pair[0]), fmt(pair[1], 2), fmt(pair[2], 2)],
        ['ratio', fmt(pair[0] / check[0], 2), '', ''],
      ],
    ),
  );

  const debt = await overshoot(true);
  const dropped = await overshoot(false);
  console.log(
    '\nOne key, 10,000 tokens a minute (sliding log), each request reserving 100 and using 0–300, 10 simulated minutes:\n',
  );
  console.log(
    table(
      ['settle of an extra', 'requests admitted', 'most tokens used in a minute', 'over the limit'],
      [
        ['charged as debt', fmt(debt.requests), fmt(debt.worst), fmt(debt.worst - 10_000)],
        ['dropped when it does not fit', fmt(dropped.requests), fmt(dropped.worst), fmt(dropped.worst - 10_000)],
      ],
    ),
  );
} finally {
  await store.close();
  client.disconnect();
  admin.disconnect();
  await server.stop();
}
