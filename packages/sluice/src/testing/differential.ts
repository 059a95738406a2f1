/**
 * The differential test of sluice/testing: random traces of checks, peeks, multi-limit checks, refunds, resets and
 * time steps must give the same decisions on the memory store and on the store under test, for every algorithm.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { Decision } from '../core/decision.js';
import {
  ALGORITHMS,
  type AlgorithmName,
  isBucketAlgorithm,
  type ResolvedPolicy,
  resolvePolicy,
} from '../core/policy.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Store } from '../stores/store.js';
import { T0 } from './conformance.js';

/** Options of the differential test. */
export interface DifferentialOptions {
  /** Random traces per algorithm. @default 30 */
  runs?: number;
  /** The seed of the first trace (printed on a failure, to replay it). @default a random one */
  seed?: number;
  /** The algorithms the store takes. @default all */
  algorithms?: readonly AlgorithmName[];
}

/** A small seeded generator (mulberry32): the same seed, the same trace. */
function random(seed: number) {
  let a = seed >>> 0;
  return (n: number) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

type Pick = ReturnType<typeof random>;

/** A random policy of the algorithm, and a second one for multi-limit checks. */
function policies(algorithm: AlgorithmName, pick: Pick): [ResolvedPolicy, ResolvedPolicy] {
  const limit = pick(7);
  const period = [7, 100, 1000, 3600, 60_000][pick(5)] as number;
  const burst = isBucketAlgorithm(algorithm) && pick(2) === 1 ? { burst: 1 + pick(8) } : {};
  const blockDuration = [0, 0, 250, 2000][pick(4)] as number;
  return [
    resolvePolicy({ algorithm, limit, period, blockDuration, ...burst }),
    resolvePolicy({ algorithm, limit: limit + 2, period: period * 2 }),
  ];
}

/** Decisions compared as JSON carries them. */
const plain = (d: Decision) => ({ ...d, retryAfterMs: Number.isFinite(d.retryAfterMs) ? d.retryAfterMs : 'Infinity' });

/** One random trace of up to 40 steps on both stores; throws on the first difference. */
async function runTrace(store: Store, algorithm: AlgorithmName, seed: number, label: string): Promise<void> {
  const pick = random(seed);
  const [p, other] = policies(algorithm, pick);
  const memory = createMemoryStore({ sweepIntervalMs: 0 });
  const keys = [0, 1, 2].map((k) => `diff:${label}:${seed}:${k}:{x}`);
  let now = T0 + pick(60_000);
  const steps = 1 + pick(40);
  for (let step = 0; step < steps; step++) {
    const kind = pick(17);
    const key = keys[pick(3)] as string;
    const cost = pick(2) === 0 ? 1 : pick(6);
    const where = `seed ${seed} step ${step} (kind ${kind}, cost ${cost})`;
    if (kind < 6) {
      assert.deepEqual(
        plain(await store.check(key, p, cost, now, true)),
        plain(memory.check(key, p, cost, now, true)),
        where,
      );
    } else if (kind < 8) {
      assert.deepEqual(
        plain(await store.check(key, p, cost, now, false)),
        plain(memory.check(key, p, cost, now, false)),
        where,
      );
    } else if (kind < 10) {
      const items = [
        { key, policy: p, cost },
        { key: `${key}:m`, policy: other, cost: 1 },
      ];
      assert.deepEqual(
        (await store.checkMany(items, now, true)).map(plain),
        memory.checkMany(items, now, true).map(plain),
        where,
      );
    } else if (kind === 10) {
      await store.refund(key, p, cost, now);
      memory.refund(key, p, cost, now);
    } else if (kind === 11) {
      await store.reset(key, p);
      memory.reset(key, p);
    } else {
      const r = pick(3);
      now +=
        r === 0
          ? 0
          : r === 1
            ? Math.floor((pick(400) * p.periodMs) / 1000)
            : Math.floor((pick(2500) * p.periodMs) / 1000);
    }
  }
  await memory.close();
}

/**
 * Registers the differential test of a store with node:test: `runs` random traces per algorithm, each decided on
 * the memory store and on `store()` with the caller's clock, which must agree to the number. A failure names the
 * seed: pass it as `seed` (with `runs: 1`) to replay the trace.
 */
export function runDifferential(
  label: string,
  store: () => Store | Promise<Store>,
  options: DifferentialOptions = {},
): void {
  const runs = options.runs ?? 30;
  const first = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  describe(`differential: memory store vs ${label} (seed ${first})`, () => {
    for (const algorithm of ALGORITHMS) {
      const skip = options.algorithms !== undefined && !options.algorithms.includes(algorithm);
      it(
        `${algorithm}: identical decisions on random traces`,
        { skip: skip ? `${label} does not take ${algorithm}` : false },
        async () => {
          for (let run = 0; run < runs; run++) await runTrace(await store(), algorithm, first + run, label);
        },
      );
    }
  });
}
