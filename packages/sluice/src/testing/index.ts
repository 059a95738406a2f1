/**
 * The `sluice/testing` entry point, the store kit's tests: `storeConformance` registers sluice's store conformance
 * suite and the differential test (memory ≡ your store on random traces) with node:test, for any Store.
 */
import { after, describe } from 'node:test';
import type { Store } from '../stores/store.js';
import { type ConformanceOptions, runStoreConformance } from './conformance.js';
import { type DifferentialOptions, runDifferential } from './differential.js';

export { type ConformanceOptions, runStoreConformance, type StoreFixture, T0 } from './conformance.js';
export { type DifferentialOptions, runDifferential } from './differential.js';

/** Options of {@link storeConformance}. */
export interface StoreConformanceOptions extends ConformanceOptions {
  /** The store's name in the tests' titles. */
  name: string;
  /**
   * Creates the store under test, deciding with the `nowMs` it is given (a store with a clock of its own: its
   * client-clock mode). Called once; its `close()` is called after the tests.
   */
  createStore(): Store | Promise<Store>;
  /** The differential test's options; false to leave it out. @default { runs: 30 } */
  differential?: DifferentialOptions | false;
}

/**
 * Registers the store conformance suite and the differential test for a store with node:test. Run the file that
 * calls it with `node --test` (through tsx for TypeScript). No property-testing library is needed: the
 * differential test draws its traces from a seeded generator and names the seed of a failing one.
 * @example
 * import { storeConformance } from 'sluice/testing';
 * storeConformance({ name: 'my-store', createStore: () => createMyStore({ clock: 'client' }) });
 */
export function storeConformance(options: StoreConformanceOptions): void {
  let store: Promise<Store> | undefined;
  const shared = () => {
    store ??= Promise.resolve(options.createStore());
    return store;
  };
  describe(options.name, () => {
    after(async () => {
      if (store !== undefined) await (await store).close();
    });
    runStoreConformance(options.name, async () => ({ store: await shared(), close: async () => {} }), options);
    if (options.differential !== false) {
      const algorithms = options.algorithms ? { algorithms: options.algorithms } : {};
      runDifferential(options.name, shared, { ...options.differential, ...algorithms });
    }
  });
}

// The store kit itself: a Store made of any database that can read-decide-write a few rows atomically.
export { createKitStore, type KitStore, type KitStoreOptions } from '../stores/kit/kit-store.js';
export type { StateBackend, StateStep, StateWrite, StoredState } from '../stores/kit/state-backend.js';
