/**
 * The store conformance suite (sluice/testing): every algorithm × every store operation, with the same expectations
 * for every store. A store passes when it makes exactly the decisions of the reference model (the
 * pure algorithm steps in src/algorithms) and keeps keys, policies and limits apart.
 *
 * Stores are driven with the caller's time (`nowMs`), so a store with a clock of its own must run in
 * client-clock mode here.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { NUMERIC_ALGORITHMS, SLOT_WIDTH } from '../algorithms/index.js';
import { SlidingLogState, slidingLog } from '../algorithms/sliding-log.js';
import type { Decision } from '../core/decision.js';
import { ALGORITHMS, type AlgorithmName, type ResolvedPolicy, resolvePolicy } from '../core/policy.js';
import type { Store } from '../stores/store.js';

/** A store under test and how to dispose of it. */
export interface StoreFixture {
  store: Store;
  close(): Promise<void>;
}

/** What a store under test takes and offers. */
export interface ConformanceOptions {
  /** Creates a store that keeps at most `maxKeys` keys; without it the eviction cases are skipped. */
  withMaxKeys?: (maxKeys: number) => Promise<StoreFixture>;
  /** The algorithms the store takes (a store may refuse some, e.g. multi-region eventual mode). @default all */
  algorithms?: readonly AlgorithmName[];
}

/** A minute boundary, so windows of 1 s and 1 min both start here. */
export const T0 = 1_700_000_040_000;

let keySeq = 0;
/** A key no other case uses, so cases never see each other's counters on a shared store. */
const freshKey = (label: string) => `${label}:${process.pid}:${++keySeq}:{weird}key`;

function policy(
  algorithm: AlgorithmName,
  limit = 3,
  period = 1000,
  extra: { burst?: number; blockDuration?: number } = {},
) {
  return resolvePolicy({ algorithm, limit, period, ...extra });
}

/** The reference model: the pure algorithm steps over one key's state. */
class Reference {
  private readonly slots = new Float64Array(SLOT_WIDTH);
  private log = new SlidingLogState();
  constructor(private readonly p: ResolvedPolicy) {}
  check(now: number, cost: number, commit: boolean): Decision {
    if (this.p.algorithm === 'sliding-log') return slidingLog.check(this.log, 0, now, this.p, cost, commit);
    return NUMERIC_ALGORITHMS[this.p.algorithm].check(this.slots, 0, now, this.p, cost, commit);
  }
  reset() {
    this.slots.fill(0);
    this.log = new SlidingLogState();
  }
}

/** Decisions compared as JSON would carry them (Infinity as a string, since JSON has none). */
function plain(d: Decision) {
  return { ...d, retryAfterMs: Number.isFinite(d.retryAfterMs) ? d.retryAfterMs : 'Infinity' };
}

/** Registers the conformance cases of one store with node:test, under `store conformance: <label>`. */
export function runStoreConformance(
  label: string,
  setup: () => Promise<StoreFixture>,
  options: ConformanceOptions = {},
) {
  describe(`store conformance: ${label}`, () => {
    let fixture: StoreFixture;
    let store: Store;
    before(async () => {
      fixture = await setup();
      store = fixture.store;
    });
    after(async () => {
      await fixture?.close();
    });

    for (const algorithm of ALGORITHMS) {
      const skip = options.algorithms !== undefined && !options.algorithms.includes(algorithm);
      describe(algorithm, { skip: skip ? `${label} does not take ${algorithm}` : false }, () => {
        it('admits exactly the limit, counting remaining down, then rejects with a retry time', async () => {
          const p = policy(algorithm);
          const key = freshKey(label);
          const seen: [boolean, number][] = [];
          for (let i = 0; i < 5; i++) {
            const d = await store.check(key, p, 1, T0, true);
            seen.push([d.allowed, d.remaining]);
            if (!d.allowed)
              assert.ok(d.retryAfterMs > 0 && Number.isFinite(d.retryAfterMs), 'retryAfterMs on rejection');
            else assert.equal(d.retryAfterMs, 0);
            assert.equal(d.limit, 3);
          }
          assert.deepEqual(seen, [
            [true, 2],
            [true, 1],
            [true, 0],
            [false, 0],
            [false, 0],
          ]);
        });

        it('matches the reference model step by step on a mixed trace', async () => {
          const p = policy(
            algorithm,
            4,
            1000,
            algorithm.includes('bucket') || algorithm === 'gcra' ? { burst: 6 } : {},
          );
          const key = freshKey(label);
          const ref = new Reference(p);
          const steps: [number, number, boolean][] = [
            [0, 1, true],
            [10, 2, true],
            [20, 0, true],
            [30, 3, true],
            [40, 1, false],
            [250, 1, true],
            [999, 2, true],
            [1000, 1, true],
            [1400, 4, true],
            [2600, 1, true],
            [2601, 5, false],
          ];
          for (const [at, cost, commit] of steps) {
            const got = await store.check(key, p, cost, T0 + at, commit);
            assert.deepEqual(plain(got), plain(ref.check(T0 + at, cost, commit)), `at +${at}ms cost ${cost}`);
          }
        });

        it('peek and cost 0 look without consuming', async () => {
          const p = policy(algorithm);
          const key = freshKey(label);
          await store.check(key, p, 1, T0, true);
          for (let i = 0; i < 4; i++) {
            const look = await store.check(key, p, 1, T0, false);
            assert.equal(look.allowed, true);
            assert.equal(look.remaining, 2);
            const zero = await store.check(key, p, 0, T0, true);
            assert.equal(zero.allowed, true);
            assert.equal(zero.remaining, 2);
          }
        });

        it('a cost takes that many units, and a rejected cost takes nothing', async () => {
          const p = policy(algorithm);
          const key = freshKey(label);
          assert.equal((await store.check(key, p, 2, T0, true)).remaining, 1);
          const rejected = await store.check(key, p, 2, T0, true);
          assert.equal(rejected.allowed, false);
          assert.equal(rejected.remaining, 1);
          assert.equal((await store.check(key, p, 1, T0, true)).allowed, true);
        });

        it('a cost above capacity is rejected at once, never hangs, and consumes nothing', async () => {
          const p = policy(algorithm);
          const key = freshKey(label);
          const d = await store.check(key, p, 4, T0, true);
          assert.equal(d.allowed, false);
          assert.equal(d.reason, 'cost-exceeds-capacity');
          assert.equal(d.retryAfterMs, Number.POSITIVE_INFINITY);
          assert.equal((await store.check(key, p, 1, T0, false)).remaining, 3);
        });

        it('a limit of 0 rejects everything', async () => {
          const p = policy(algorithm, 0);
          const d = await store.check(freshKey(label), p, 1, T0, true);
          assert.equal(d.allowed, false);
          assert.equal(d.remaining, 0);
        });

        it('reset forgets the key', async () => {
          const p = policy(algorithm);
          const key = freshKey(label);
          for (let i = 0; i < 3; i++) await store.check(key, p, 1, T0, true);
          assert.equal((await store.check(key, p, 1, T0, true)).allowed, false);
          await store.reset(key, p);
          const d = await store.check(key, p, 1, T0, true);
          assert.equal(d.allowed, true);
          assert.equal(d.remaining, 2);
        });

        it('keys and policies are isolated', async () => {
          const p = policy(algorithm);
          const other = policy(algorithm, 5);
          const a = freshKey(label);
          const b = `${a}b`;
          for (let i = 0; i < 3; i++) await store.check(a, p, 1, T0, true);
          assert.equal((await store.check(a, p, 1, T0, true)).allowed, false);
          assert.equal((await store.check(b, p, 1, T0, true)).remaining, 2);
          assert.equal((await store.check(a, other, 1, T0, true)).remaining, 4);
          // Keys that differ only in characters a store might use as separators stay apart.
          for (const tricky of [`${a}}`, `{${a}`, `${a}:x`, `${a}\n`]) {
            assert.equal((await store.check(tricky, p, 1, T0, true)).remaining, 2, JSON.stringify(tricky));
          }
        });

        it('is back to full capacity once the reset time has passed', async () => {
          const p = policy(algorithm);
          const key = freshKey(label);
          let last: Decision | undefined;
          for (let i = 0; i < 3; i++) last = await store.check(key, p, 1, T0 + 1, true);
          assert.ok(last && last.resetMs > 0);
          const later = T0 + 1 + (last?.resetMs ?? 0);
          const d = await store.check(key, p, 1, later, false);
          assert.equal(d.remaining, 3);
          assert.equal(d.resetMs, 0);
        });

        it('waiting retryAfterMs is enough for the rejected request to pass', async () => {
          const p = policy(algorithm);
          const key = freshKey(label);
          for (let i = 0; i < 3; i++) await store.check(key, p, 1, T0 + 100 * i, true);
          const rejected = await store.check(key, p, 1, T0 + 300, true);
          assert.equal(rejected.allowed, false);
          const early = await store.check(key, p, 1, T0 + 300 + rejected.retryAfterMs - 1, false);
          assert.equal(early.allowed, false, 'one ms early is still too early');
          const onTime = await store.check(key, p, 1, T0 + 300 + rejected.retryAfterMs, true);
          assert.equal(onTime.allowed, true);
        });

        it('refund gives back units taken', async () => {
          const p = policy(algorithm);
          const key = freshKey(label);
          for (let i = 0; i < 3; i++) await store.check(key, p, 1, T0, true);
          await store.refund(key, p, 2, T0);
          assert.equal((await store.check(key, p, 1, T0, false)).remaining, 2);
          await store.refund(key, p, 10, T0);
          assert.equal((await store.check(key, p, 1, T0, false)).remaining, 3, 'never beyond full');
        });

        it('blocks a key for blockMs after a rejection', async () => {
          const p = policy(algorithm, 1, 1000, { blockDuration: 5000 });
          const key = freshKey(label);
          assert.equal((await store.check(key, p, 1, T0, true)).allowed, true);
          assert.equal((await store.check(key, p, 1, T0 + 10, true)).allowed, false);
          const blocked = await store.check(key, p, 1, T0 + 2010, true);
          assert.equal(blocked.allowed, false);
          assert.equal(blocked.reason, 'blocked');
          assert.equal(blocked.retryAfterMs, 3000);
          assert.equal((await store.check(key, p, 1, T0 + 5010, true)).allowed, true);
        });

        it('several limits on one request: all or nothing', async () => {
          const small = policy(algorithm, 2);
          const big = policy(algorithm, 5);
          const key = freshKey(label);
          const other = `${key}:other-slot`;
          const items = [
            { key, policy: big, cost: 1 },
            { key: other, policy: small, cost: 1 },
          ];
          assert.ok((await store.checkMany(items, T0, true)).every((d) => d.allowed));
          assert.ok((await store.checkMany(items, T0, true)).every((d) => d.allowed));
          const third = await store.checkMany(items, T0, true);
          assert.deepEqual(
            third.map((d) => d.allowed),
            [true, false],
          );
          // The rejected request took nothing from the limit that had room.
          assert.equal((await store.check(key, big, 1, T0, false)).remaining, 3);
          const peeked = await store.checkMany(items, T0, false);
          assert.equal(peeked[0]?.remaining, 3);
        });
      });
    }

    describe('concurrency leases', () => {
      it('allows limit leases, frees one on release, and lets an abandoned lease lapse', async () => {
        const key = freshKey(label);
        const a = await store.acquire(key, 2, 1000, T0);
        const b = await store.acquire(key, 2, 1000, T0 + 10);
        assert.ok(a.allowed && b.allowed && a.lease && b.lease);
        assert.equal(b.remaining, 0);
        const c = await store.acquire(key, 2, 1000, T0 + 20);
        assert.equal(c.allowed, false);
        assert.equal(c.retryAfterMs, 980);
        assert.equal(await store.release(a.lease as NonNullable<typeof a.lease>, T0 + 30), true);
        assert.equal(await store.release(a.lease as NonNullable<typeof a.lease>, T0 + 30), false, 'released once');
        const d = await store.acquire(key, 2, 1000, T0 + 40);
        assert.equal(d.allowed, true);
        // b was never released: it lapses at T0 + 1010.
        assert.equal((await store.acquire(key, 2, 1000, T0 + 1009)).allowed, false);
        assert.equal((await store.acquire(key, 2, 1000, T0 + 1010)).allowed, true);
      });
    });

    describe('eviction', () => {
      const withMaxKeys = options.withMaxKeys;
      it(
        'keeps at most maxKeys keys, forgetting the least recently used',
        { skip: withMaxKeys ? false : 'store has no key cap; its keys expire by TTL' },
        async () => {
          const capped = await (withMaxKeys as NonNullable<typeof withMaxKeys>)(3);
          try {
            const p = policy('fixed-window', 1, 60_000);
            for (const k of ['a', 'b', 'c']) await capped.store.check(k, p, 1, T0, true);
            await capped.store.check('a', p, 1, T0, false); // a is now the most recently used
            await capped.store.check('d', p, 1, T0, true); // evicts b
            assert.equal((await capped.store.check('a', p, 1, T0, false)).allowed, false);
            assert.equal((await capped.store.check('b', p, 1, T0, false)).allowed, true, 'b was evicted');
            assert.equal((await capped.store.check('c', p, 1, T0, false)).allowed, false);
            assert.equal((await capped.store.check('d', p, 1, T0, false)).allowed, false);
          } finally {
            await capped.close();
          }
        },
      );
    });
  });
}
