/**
 * The store conformance suite, as sluice/testing exports it (src/testing/conformance.ts): one suite, run here on
 * sluice's own stores and by third-party stores through storeConformance.
 */
export { type ConformanceOptions, runStoreConformance, type StoreFixture, T0 } from '../../src/testing/conformance.js';
