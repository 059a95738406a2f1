/**
 * The compact memory store: the store kit's conformance suite and differential test, a fast-check differential test
 * against the full memory store on richer traces (charges, refunds with takenAtMs, blocks, costs past capacity), its
 * maxKeys and maxBytes bounds (which keys it forgets, and that a forgotten key starts afresh), and that it keeps no
 * leases.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Decision } from '../../core/decision.js';
import { ALGORITHMS, isBucketAlgorithm, resolvePolicy } from '../../core/policy.js';
import { storeConformance } from '../../testing/index.js';
import { createCompactMemoryStore } from './compact-store.js';
import { createMemoryStore } from './memory-store.js';

const T0 = 1_700_000_040_000;
const NUM_RUNS = Number(process.env.SLUICE_PROPERTY_RUNS ?? 150);

storeConformance({
  name: 'compact memory',
  createStore: () => createCompactMemoryStore(),
  withMaxKeys: async (maxKeys) => ({ store: createCompactMemoryStore({ maxKeys }), close: async () => {} }),
  leases: false,
  differential: { runs: 30, ...(process.env.SLUICE_SEED ? { seed: Number(process.env.SLUICE_SEED) } : {}) },
});

type Op =
  | { kind: 'check'; key: number; cost: number; commit: boolean; unblocked: boolean }
  | { kind: 'many'; key: number; cost: number; commit: boolean; twice: boolean }
  | { kind: 'charge'; key: number; cost: number }
  | { kind: 'refund'; key: number; cost: number; back: number | undefined }
  | { kind: 'reset'; key: number }
  | { kind: 'advance'; permille: number };

// Two keys, so that operations often meet on one.
const key = fc.nat(1);
// 0, 1, and costs past every policy's capacity (limits go up to 6, bursts up to 8).
const cost = fc.oneof(fc.constant(0), fc.constant(1), fc.nat(12));
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      key,
      cost,
      commit: fc.boolean(),
      // The same policy id without a block duration: it shares the counter, not the block.
      unblocked: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('many' as const), key, cost, commit: fc.boolean(), twice: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('charge' as const), key, cost: fc.nat(20) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('refund' as const),
      key,
      cost,
      back: fc.option(fc.nat(2500), { nil: undefined, freq: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const), key }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      permille: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 }), fc.integer({ min: 0, max: 2500 })),
    }),
  },
);

const policyArb = fc.record({
  algorithm: fc.constantFrom(...ALGORITHMS),
  limit: fc.nat(6),
  period: fc.constantFrom(7, 100, 1000, 60_000),
  burst: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
  blockDuration: fc.constantFrom(0, 0, 250, 2000),
});

/** Decisions compared as JSON carries them. */
const plain = (d: Decision) => ({ ...d, retryAfterMs: Number.isFinite(d.retryAfterMs) ? d.retryAfterMs : 'Infinity' });

/** Runs one trace on both stores, asserting the same answer at every step. */
function sameDecisions(options: PolicyOptions, ops: readonly Op[]) {
  const { burst, ...rest } = options;
  const p = resolvePolicy({ ...rest, ...(burst !== undefined && isBucketAlgorithm(rest.algorithm) ? { burst } : {}) });
  const unblocked = { ...p, blockMs: 0 };
  const other = resolvePolicy({ algorithm: rest.algorithm, limit: rest.limit + 2, period: rest.period * 2 });
  const full = createMemoryStore({ sweepIntervalMs: 0 });
  const compact = createCompactMemoryStore();
  let now = T0 + 123;
  for (const [step, op] of ops.entries()) {
    const k = `k${'key' in op ? op.key : 0}`;
    const at = `step ${step}: ${JSON.stringify(op)}`;
    if (op.kind === 'check') {
      const q = op.unblocked ? unblocked : p;
      assert.deepEqual(
        plain(compact.check(k, q, op.cost, now, op.commit)),
        plain(full.check(k, q, op.cost, now, op.commit)),
        at,
      );
    } else if (op.kind === 'many') {
      const items = [
        { key: k, policy: p, cost: op.cost },
        { key: `${k}:m`, policy: other, cost: 1 },
        ...(op.twice ? [{ key: k, policy: p, cost: op.cost }] : []),
      ];
      assert.deepEqual(
        compact.checkMany(items, now, op.commit).map(plain),
        full.checkMany(items, now, op.commit).map(plain),
        at,
      );
    } else if (op.kind === 'charge') {
      const items = [{ key: k, policy: p, cost: op.cost }];
      assert.deepEqual(compact.charge(items, now).map(plain), full.charge(items, now).map(plain), at);
    } else if (op.kind === 'refund') {
      const takenAt = op.back === undefined ? undefined : now - Math.floor((op.back * p.periodMs) / 1000);
      compact.refundMany(
        [{ key: k, policy: p, cost: op.cost, ...(takenAt === undefined ? {} : { takenAtMs: takenAt }) }],
        now,
      );
      full.refund(k, p, op.cost, now, takenAt);
    } else if (op.kind === 'reset') {
      compact.reset(k, p);
      full.reset(k, p);
    } else {
      now += Math.floor((op.permille * p.periodMs) / 1000);
    }
  }
}

type PolicyOptions = {
  algorithm: (typeof ALGORITHMS)[number];
  limit: number;
  period: number;
  burst: number | undefined;
  blockDuration: number;
};

describe('compact memory store', () => {
  it('decides exactly as the full memory store on random traces (fast-check prints seed and trace)', () => {
    fc.assert(
      fc.property(policyArb, fc.array(opArb, { minLength: 10, maxLength: 60 }), (options, ops) =>
        sameDecisions(options, ops),
      ),
      { numRuns: NUM_RUNS * ALGORITHMS.length },
    );
  });

  it('keeps at most maxKeys keys however many take units, and a forgotten key starts afresh', () => {
    const store = createCompactMemoryStore({ maxKeys: 50 });
    const p = resolvePolicy({ algorithm: 'fixed-window', limit: 5, period: 60_000 });
    for (let i = 0; i < 2000; i++) assert.equal(store.check(`k${i}`, p, 2, T0, true).remaining, 3);
    // A peek shows whether a key is remembered (3 left) or forgotten (5 left); peeks store nothing.
    const remembered = Array.from({ length: 2000 }, (_, i) => store.check(`k${i}`, p, 1, T0, false).remaining === 3);
    assert.equal(remembered.filter(Boolean).length, 50);
    assert.deepEqual(remembered.slice(-50), Array(50).fill(true), 'the 50 most recent are kept');
    assert.equal(store.check('k0', p, 1, T0, true).remaining, 4, 'k0 was forgotten: a full quota again');
  });

  it('keeps sliding logs within maxBytes: a flood of requests across keys forgets the oldest logs, not the newest', () => {
    const maxBytes = 64 * 1024;
    const store = createCompactMemoryStore({ maxBytes });
    const p = resolvePolicy({ algorithm: 'sliding-log', limit: 10_000, period: 3_600_000 });
    // 200 keys × 1,000 admitted requests: ~3.2 MB of log entries were the store unbounded.
    for (let k = 0; k < 200; k++) for (let i = 0; i < 1000; i++) store.check(`k${k}`, p, 1, T0 + i, true);
    const used = (k: number) => 10_000 - store.check(`k${k}`, p, 0, T0 + 1000, false).remaining;
    assert.equal(used(199), 1000, 'the newest log is whole');
    assert.equal(used(0), 0, 'the oldest was forgotten');
    const kept = Array.from({ length: 200 }, (_, k) => used(k)).filter((n) => n > 0).length;
    // 1,000 requests log 2,000 numbers, ~16 KB: about four logs fit in 64 KiB.
    assert.ok(kept >= 3 && kept <= 4, `${kept} logs kept`);
  });

  it('forgets an expired key before live ones, and a key at its limit or blocked last', () => {
    const store = createCompactMemoryStore({ maxKeys: 3 });
    const p = resolvePolicy({ algorithm: 'fixed-window', limit: 2, period: 1000 });
    store.check('old', p, 1, T0, true); // expires at T0 + 1000
    store.check('b', p, 1, T0 + 1000, true);
    store.check('c', p, 1, T0 + 1000, true);
    store.check('old', p, 1, T0 + 1000, false); // most recently used, but expired
    store.check('d', p, 1, T0 + 1500, true);
    assert.equal(store.check('b', p, 1, T0 + 1500, false).remaining, 1, 'b kept');
    assert.equal(store.check('c', p, 1, T0 + 1500, false).remaining, 1, 'c kept');

    // alice at her limit outlives a flood of throw-away keys that still have quota.
    const login = resolvePolicy({ algorithm: 'fixed-window', limit: 1, period: 60_000 });
    const flood = resolvePolicy({ algorithm: 'fixed-window', limit: 5, period: 60_000 });
    store.check('alice', login, 1, T0 + 2000, true);
    for (let i = 0; i < 100; i++) store.check(`x${i}`, flood, 1, T0 + 2000, true);
    assert.equal(store.check('alice', login, 1, T0 + 2000, true).allowed, false, 'alice is still at her limit');
  });

  it('keeps no leases: acquire and release throw a coded error (the edge build has no concurrency option)', () => {
    const store = createCompactMemoryStore();
    assert.throws(() => store.acquire('a', 5, 1000, T0), { code: 'ERR_SLUICE_STORE_UNSUPPORTED' });
    assert.throws(() => store.release({ key: 'a', id: 'x', expiresAt: T0 + 1 }, T0), {
      code: 'ERR_SLUICE_STORE_UNSUPPORTED',
    });
  });

  it('refuses to decide once closed, and refuses a maxKeys below 1', async () => {
    const store = createCompactMemoryStore();
    const p = resolvePolicy({ algorithm: 'gcra', limit: 1, period: 1000 });
    await store.close();
    assert.throws(() => store.check('k', p, 1, T0, true), { code: 'ERR_SLUICE_STORE_CLOSED' });
    assert.throws(() => store.charge([{ key: 'k', policy: p, cost: 1 }], T0), { code: 'ERR_SLUICE_STORE_CLOSED' });
    assert.throws(() => createCompactMemoryStore({ maxKeys: 0 }), { code: 'ERR_SLUICE_INVALID_OPTION' });
  });
});
