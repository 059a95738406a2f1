/**
 * The store conformance suite's cases (sluice/testing): each a named check of one store operation, run for
 * every algorithm (ALGORITHM_CASES) or once (LEASE_CASES), by conformance.ts.
 */
import { strict as assert } from 'node:assert';
import type { Decision } from '../core/decision.js';
import type { AlgorithmName } from '../core/policy.js';
import type { Store } from '../stores/store.js';
import { freshKey, plain, policy, Reference, T0 } from './conformance-model.js';

/** A case: the store under test, the algorithm, and the store's label (keys are fresh per label). */
type Case = (store: Store, algorithm: AlgorithmName, label: string) => Promise<void>;

/** The cases every algorithm runs, by name. */
export const ALGORITHM_CASES: Readonly<Record<string, Case>> = {
  'admits exactly the limit, counting remaining down, then rejects with a retry time': async (
    store,
    algorithm,
    label,
  ) => {
    const p = policy(algorithm);
    const key = freshKey(label);
    const seen: [boolean, number][] = [];
    for (let i = 0; i < 5; i++) {
      const d = await store.check(key, p, 1, T0, true);
      seen.push([d.allowed, d.remaining]);
      if (!d.allowed) assert.ok(d.retryAfterMs > 0 && Number.isFinite(d.retryAfterMs), 'retryAfterMs on rejection');
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
  },
  'matches the reference model step by step on a mixed trace': async (store, algorithm, label) => {
    const p = policy(algorithm, 4, 1000, algorithm.includes('bucket') || algorithm === 'gcra' ? { burst: 6 } : {});
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
  },
  'peek and cost 0 look without consuming': async (store, algorithm, label) => {
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
  },
  'a cost takes that many units, and a rejected cost takes nothing': async (store, algorithm, label) => {
    const p = policy(algorithm);
    const key = freshKey(label);
    assert.equal((await store.check(key, p, 2, T0, true)).remaining, 1);
    const rejected = await store.check(key, p, 2, T0, true);
    assert.equal(rejected.allowed, false);
    assert.equal(rejected.remaining, 1);
    assert.equal((await store.check(key, p, 1, T0, true)).allowed, true);
  },
  'a cost above capacity is rejected at once, never hangs, and consumes nothing': async (store, algorithm, label) => {
    const p = policy(algorithm);
    const key = freshKey(label);
    const d = await store.check(key, p, 4, T0, true);
    assert.equal(d.allowed, false);
    assert.equal(d.reason, 'cost-exceeds-capacity');
    assert.equal(d.retryAfterMs, Number.POSITIVE_INFINITY);
    assert.equal((await store.check(key, p, 1, T0, false)).remaining, 3);
  },
  'a limit of 0 rejects everything': async (store, algorithm, label) => {
    const p = policy(algorithm, 0);
    const d = await store.check(freshKey(label), p, 1, T0, true);
    assert.equal(d.allowed, false);
    assert.equal(d.remaining, 0);
  },
  'reset forgets the key': async (store, algorithm, label) => {
    const p = policy(algorithm);
    const key = freshKey(label);
    for (let i = 0; i < 3; i++) await store.check(key, p, 1, T0, true);
    assert.equal((await store.check(key, p, 1, T0, true)).allowed, false);
    await store.reset(key, p);
    const d = await store.check(key, p, 1, T0, true);
    assert.equal(d.allowed, true);
    assert.equal(d.remaining, 2);
  },
  'keys and policies are isolated': async (store, algorithm, label) => {
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
  },
  'is back to full capacity once the reset time has passed': async (store, algorithm, label) => {
    const p = policy(algorithm);
    const key = freshKey(label);
    let last: Decision | undefined;
    for (let i = 0; i < 3; i++) last = await store.check(key, p, 1, T0 + 1, true);
    assert.ok(last && last.resetMs > 0);
    const later = T0 + 1 + (last?.resetMs ?? 0);
    const d = await store.check(key, p, 1, later, false);
    assert.equal(d.remaining, 3);
    assert.equal(d.resetMs, 0);
  },
  'waiting retryAfterMs is enough for the rejected request to pass': async (store, algorithm, label) => {
    const p = policy(algorithm);
    const key = freshKey(label);
    for (let i = 0; i < 3; i++) await store.check(key, p, 1, T0 + 100 * i, true);
    const rejected = await store.check(key, p, 1, T0 + 300, true);
    assert.equal(rejected.allowed, false);
    const early = await store.check(key, p, 1, T0 + 300 + rejected.retryAfterMs - 1, false);
    assert.equal(early.allowed, false, 'one ms early is still too early');
    const onTime = await store.check(key, p, 1, T0 + 300 + rejected.retryAfterMs, true);
    assert.equal(onTime.allowed, true);
  },
  'refund gives back units taken': async (store, algorithm, label) => {
    const p = policy(algorithm);
    const key = freshKey(label);
    for (let i = 0; i < 3; i++) await store.check(key, p, 1, T0, true);
    await store.refund(key, p, 2, T0);
    assert.equal((await store.check(key, p, 1, T0, false)).remaining, 2);
    await store.refund(key, p, 10, T0);
    assert.equal((await store.check(key, p, 1, T0, false)).remaining, 3, 'never beyond full');
  },
  'blocks a key for blockMs after a rejection': async (store, algorithm, label) => {
    const p = policy(algorithm, 1, 1000, { blockDuration: 5000 });
    const key = freshKey(label);
    assert.equal((await store.check(key, p, 1, T0, true)).allowed, true);
    assert.equal((await store.check(key, p, 1, T0 + 10, true)).allowed, false);
    const blocked = await store.check(key, p, 1, T0 + 2010, true);
    assert.equal(blocked.allowed, false);
    assert.equal(blocked.reason, 'blocked');
    assert.equal(blocked.retryAfterMs, 3000);
    assert.equal((await store.check(key, p, 1, T0 + 5010, true)).allowed, true);
  },
  'several limits on one request: all or nothing': async (store, algorithm, label) => {
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
  },
};

/** The cases run once per store, by name. */
export const LEASE_CASES: Readonly<Record<string, (store: Store, label: string) => Promise<void>>> = {
  'allows limit leases, frees one on release, and lets an abandoned lease lapse': async (store, label) => {
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
  },
};
