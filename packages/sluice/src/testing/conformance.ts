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
import { ALGORITHMS, type AlgorithmName } from '../core/policy.js';
import type { Store } from '../stores/store.js';
import { ALGORITHM_CASES, LEASE_CASES } from './conformance-cases.js';
import { policy, T0 } from './conformance-model.js';

export { T0 } from './conformance-model.js';

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
  /** False for a store that keeps no concurrency leases (its `acquire` throws): the lease cases are skipped. @default true */
  leases?: boolean;
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
        for (const [name, run] of Object.entries(ALGORITHM_CASES)) it(name, () => run(store, algorithm, label));
      });
    }

    describe('concurrency leases', { skip: options.leases === false ? `${label} keeps no leases` : false }, () => {
      for (const [name, run] of Object.entries(LEASE_CASES)) it(name, () => run(store, label));
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
