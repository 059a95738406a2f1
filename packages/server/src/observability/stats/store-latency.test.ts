import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { createStoreLatencyReader } from './store-latency.js';

function setup() {
  const registry = new Registry();
  const histogram = new Histogram({
    name: 'sluice_store_latency_seconds',
    help: 'h',
    labelNames: ['store'],
    buckets: [0.001, 0.002, 0.004],
    registers: [registry],
  });
  const errors = new Counter({
    name: 'sluice_store_errors_total',
    help: 'e',
    labelNames: ['store'],
    registers: [registry],
  });
  let nowMs = 0;
  const read = createStoreLatencyReader({ registry, now: () => nowMs, windowMs: 10_000 });
  const at = (ms: number) => {
    nowMs = ms;
  };
  return { histogram, errors, read, at };
}

describe('createStoreLatencyReader', () => {
  it('says nothing without calls', async () => {
    const { read } = setup();
    assert.deepEqual(await read(), { calls: 0, errors: 0, p50Ms: null, p99Ms: null, meanMs: null, windowS: 0 });
  });

  it('estimates percentiles within buckets, over the recent window only', async () => {
    const { histogram, errors, read, at } = setup();
    for (let i = 0; i < 100; i++) histogram.observe({ store: 'memory' }, 0.0015); // all in (1, 2] ms
    errors.inc({ store: 'memory' }, 2);
    const first = await read();
    assert.equal(first.calls, 100);
    assert.equal(first.errors, 2);
    assert.equal(first.p50Ms, 1.5);
    assert.ok(Math.abs((first.p99Ms ?? 0) - 1.99) < 1e-9);
    assert.ok(Math.abs((first.meanMs ?? 0) - 1.5) < 1e-9);

    at(11_000);
    for (let i = 0; i < 10; i++) histogram.observe({ store: 'memory' }, 0.003); // (2, 4] ms
    const second = await read();
    assert.equal(second.calls, 10); // the sample at 0 is the baseline
    assert.equal(second.errors, 0);
    assert.equal(second.windowS, 11);
    assert.equal(second.p50Ms, 3);
  });

  it('reports the last bound for calls slower than every bucket', async () => {
    const { histogram, read } = setup();
    histogram.observe({ store: 'memory' }, 1);
    assert.equal((await read()).p99Ms, 4);
  });
});
