/**
 * The core engine, single thread: decisions per second per algorithm for one hot key and for
 * 1,000,000 distinct keys, and heap bytes per key after 1,000,000 keys, side by side with
 * rate-limiter-flexible (RateLimiterMemory.consume) and express-rate-limit's MemoryStore (increment).
 *
 *   node --expose-gc --import tsx bench/core.ts
 *
 * Limits are set high enough that nothing is rejected (the sliding log's clock runs ahead instead: see
 * sluice()): this measures the cost of a decision. Rates are
 * per CPU-second of the measuring process (bench/lib/measure.ts), so other load on the machine does not
 * change them much.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MemoryStore } from 'express-rate-limit';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { ALGORITHMS, type AlgorithmName, createLimiter, createMemoryStore } from '../packages/sluice/src/index.js';
import {
  allocatedBytesPerCallAsync,
  fmt,
  opsPerSecondAsync,
  opsPerSecondSync,
  retainedBytes,
  table,
} from './lib/measure.js';

const HOT_OPS = Number(process.env.BENCH_HOT_OPS ?? 2_000_000);
const KEYS = Number(process.env.BENCH_KEYS ?? 1_000_000);
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const LIMIT = 100_000_000;

function sluice(algorithm: AlgorithmName, hot: boolean) {
  const store = createMemoryStore({ maxKeys: KEYS });
  if (algorithm !== 'sliding-log') return createLimiter({ algorithm, limit: LIMIT, period: '1h', store });
  // The sliding log keeps an entry per request, so it takes at most 10,000 per period: a hot key here
  // would be rejected after 10,000 checks. Its clock runs 1 ms ahead per check instead (still read from
  // Date.now, as the others'), so the hot key holds a steady log of 1,000 entries and is never rejected.
  // Distinct keys take one entry each and keep the wall clock.
  let ahead = 0;
  const clock = hot ? { now: () => Date.now() + ahead++ } : { now: Date.now };
  return createLimiter({ algorithm, limit: 10_000, period: '1s', store, clock });
}

interface Row {
  name: string;
  hotSync?: number;
  hotAsync: number;
  distinct: number;
  bytesPerKey: number;
  /** Heap bytes one awaited hot-key call allocates, garbage included (see measureAllocation). */
  allocatedPerAwait?: number;
}

/** A child's young generation big enough for a whole allocation loop (see allocatedBytesPerCallAsync). */
const ALLOCATION_FLAGS = ['--min-semi-space-size=128', '--max-semi-space-size=128'];

const makeRateLimiterFlexible = () => new RateLimiterMemory({ points: LIMIT, duration: 3600 });

function makeExpressRateLimit(): MemoryStore {
  const store = new MemoryStore();
  store.init({ windowMs: 3_600_000 } as Parameters<MemoryStore['init']>[0]);
  return store;
}

/** The awaited hot-key call a subject's "await" column measures. */
function hotCall(subject: string): () => Promise<unknown> {
  if (subject === 'rate-limiter-flexible') {
    const limiter = makeRateLimiterFlexible();
    return () => limiter.consume('hot');
  }
  if (subject === 'express-rate-limit') {
    const store = makeExpressRateLimit();
    return () => store.increment('hot');
  }
  const limiter = sluice(subject as AlgorithmName, true);
  return () => limiter.check('hot');
}

/**
 * What one awaited hot-key call allocates, in a child started with ALLOCATION_FLAGS: 100,000 calls
 * after 100,000 to warm up and a full collection, so that none runs between the two heap readings (up
 * to 1.2 KB a call fits). Garbage is what the young generation's collections are paid for, so this is
 * the part of an awaited call's cost that allocation sets.
 */
async function measureAllocation(subject: string): Promise<number> {
  const call = hotCall(subject);
  await opsPerSecondAsync(100_000, call);
  retainedBytes(); // collects
  await opsPerSecondAsync(1_000, call); // what the first calls after a collection allocate once
  return allocatedBytesPerCallAsync(100_000, call);
}

/**
 * Awaited hot-key calls per CPU-second (the "await" column), after a warm-up. sluice's runs in a process
 * of its own, like every subject: after millions of `checkSync` calls V8 has compiled the check path for
 * that caller, and then declines to inline it again into `check` (it prefers the code it has), which an
 * application using one of the two never sees.
 */
async function measureHotAwait(subject: string): Promise<number> {
  const call = hotCall(subject);
  await opsPerSecondAsync(100_000, call); // warm up
  return opsPerSecondAsync(HOT_OPS / 2, call);
}

async function measureSluice(algorithm: AlgorithmName): Promise<Row> {
  const hot = sluice(algorithm, true);
  opsPerSecondSync(200_000, () => hot.checkSync('hot')); // warm up
  const hotSync = opsPerSecondSync(HOT_OPS, () => hot.checkSync('hot'));
  const { hotAsync } = inChild(`${algorithm}:await`);
  const base = retainedBytes();
  const many = sluice(algorithm, false);
  const distinct = opsPerSecondSync(KEYS, (i) => many.checkSync(keys[i] as string));
  const bytesPerKey = (retainedBytes() - base) / KEYS;
  return { name: `sluice ${algorithm}`, hotSync, hotAsync, distinct, bytesPerKey };
}

async function measureRateLimiterFlexible(): Promise<Row> {
  const hotAsync = await measureHotAwait('rate-limiter-flexible');
  const base = retainedBytes();
  const many = makeRateLimiterFlexible();
  const distinct = await opsPerSecondAsync(KEYS, (i) => many.consume(keys[i] as string));
  const bytesPerKey = (retainedBytes() - base) / KEYS;
  return { name: 'rate-limiter-flexible (RateLimiterMemory.consume)', hotAsync, distinct, bytesPerKey };
}

async function measureExpressRateLimit(): Promise<Row> {
  const hotAsync = await measureHotAwait('express-rate-limit');
  const base = retainedBytes();
  const many = makeExpressRateLimit();
  const distinct = await opsPerSecondAsync(KEYS, (i) => many.increment(keys[i] as string));
  const bytesPerKey = (retainedBytes() - base) / KEYS;
  many.shutdown();
  return { name: 'express-rate-limit (MemoryStore.increment, counter only)', hotAsync, distinct, bytesPerKey };
}

/** Each subject runs in a process of its own, so no subject's code warms up or pollutes another's. */
async function measure(subject: string): Promise<Row> {
  if (subject.endsWith(':alloc')) {
    const allocatedPerAwait = await measureAllocation(subject.slice(0, -':alloc'.length));
    return { name: subject, hotAsync: 0, distinct: 0, bytesPerKey: 0, allocatedPerAwait };
  }
  if (subject === 'rate-limiter-flexible') return measureRateLimiterFlexible();
  if (subject === 'express-rate-limit') return measureExpressRateLimit();
  if (subject.endsWith(':await')) {
    const hotAsync = await measureHotAwait(subject.slice(0, -':await'.length));
    return { name: subject, hotAsync, distinct: 0, bytesPerKey: 0 };
  }
  return measureSluice(subject as AlgorithmName);
}

function inChild(subject: string, nodeFlags: string[] = []): Row {
  const args = [...nodeFlags, '--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), subject];
  const run = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    env: process.env,
    maxBuffer: 1 << 20,
  });
  if (run.status !== 0) throw new Error(`bench/core.ts ${subject} failed:\n${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').pop() as string) as Row;
}

async function main() {
  const subject = process.argv[2];
  if (subject !== undefined) {
    console.log(JSON.stringify(await measure(subject)));
    process.exit(0);
  }
  const measured = (subject: string): Row => ({
    ...inChild(subject),
    allocatedPerAwait: inChild(`${subject}:alloc`, ALLOCATION_FLAGS).allocatedPerAwait ?? Number.NaN,
  });
  const rlf = measured('rate-limiter-flexible');
  const erl = measured('express-rate-limit');
  const rows = [...ALGORITHMS.map(measured), rlf, erl];
  const ratio = (a: number, b: number) => `${fmt(a / b, 1)}×`;
  console.log(
    `\n### Core engine, one thread (${fmt(HOT_OPS)} hot-key checks, ${fmt(KEYS)} distinct keys; operations per CPU-second)\n`,
  );
  console.log(
    table(
      [
        '',
        'hot key, sync (checks/s)',
        'hot key, await (checks/s)',
        `${fmt(KEYS)} keys (checks/s)`,
        'vs rlf (hot sync / hot await / keys)',
        'vs erl (hot sync / hot await / keys)',
        'heap bytes/key',
        'bytes allocated per awaited call',
      ],
      rows.map((r) => [
        r.name,
        r.hotSync === undefined ? '—' : fmt(r.hotSync),
        fmt(r.hotAsync),
        fmt(r.distinct),
        r.hotSync === undefined
          ? '—'
          : `${ratio(r.hotSync, rlf.hotAsync)} / ${ratio(r.hotAsync, rlf.hotAsync)} / ${ratio(r.distinct, rlf.distinct)}`,
        r.hotSync === undefined
          ? '—'
          : `${ratio(r.hotSync, erl.hotAsync)} / ${ratio(r.hotAsync, erl.hotAsync)} / ${ratio(r.distinct, erl.distinct)}`,
        fmt(r.bytesPerKey),
        r.allocatedPerAwait !== undefined && Number.isFinite(r.allocatedPerAwait) ? fmt(r.allocatedPerAwait) : '—',
      ]),
    ),
  );
  console.log('\nsluice "sync" is limiter.checkSync (memory store, no promise); "await" is `await limiter.check()`.');
  console.log('Peers only offer a promise API and are measured awaited one call at a time, like sluice "await".');
  console.log(
    "Every row runs in a fresh process, and sluice's await column in one of its own (see measureHotAwait); keys for the distinct-key column are all new (the insert path).",
  );
  console.log(
    'Bytes allocated per awaited call: the heap an awaited hot-key call allocates (garbage included), counted in a process whose young generation holds the whole loop (see measureAllocation).',
  );
}

await main();
