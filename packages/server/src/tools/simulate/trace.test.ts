import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSeededRandom } from './random.js';
import { DEFAULT_PERIODS, generateTrace, isTraceName, TRACE_NAMES } from './trace.js';

describe('generated traces', () => {
  for (const name of TRACE_NAMES) {
    it(`${name}: sorted whole milliseconds in [0, duration), unit cost, deterministic`, () => {
      const trace = generateTrace(name, { limit: 10, periodMs: 1000 });
      assert.equal(trace.name, name);
      assert.ok(trace.events.length > 0);
      const duration = DEFAULT_PERIODS[name] * 1000;
      trace.events.forEach((e, i) => {
        assert.ok(Number.isInteger(e.atMs) && e.atMs >= 0 && e.atMs < duration, `${e.atMs}`);
        assert.equal(e.cost, 1);
        if (i > 0) assert.ok(e.atMs >= (trace.events[i - 1]?.atMs as number));
      });
      assert.deepEqual(generateTrace(name, { limit: 10, periodMs: 1000 }), trace);
    });
  }

  it('steady: evenly spaced at load × limit', () => {
    const trace = generateTrace('steady', { limit: 10, periodMs: 1000, durationMs: 4000, load: 2 });
    assert.deepEqual(
      trace.events.map((e) => e.atMs),
      Array.from({ length: 80 }, (_, k) => k * 50),
    );
  });

  it('boundary: limit requests in the last tenth of a window and limit in the first tenth of the next', () => {
    const trace = generateTrace('boundary', { limit: 8, periodMs: 1000, durationMs: 3000 });
    const times = trace.events.map((e) => e.atMs);
    assert.equal(times.length, 16);
    assert.ok(times.slice(0, 8).every((t) => t >= 900 && t < 1000));
    assert.ok(times.slice(8).every((t) => t >= 1000 && t < 1100));
  });

  it('poisson: the rate is close to load × limit and the seed changes the arrivals', () => {
    const a = generateTrace('poisson', { limit: 20, periodMs: 1000, durationMs: 200_000, load: 0.5 });
    // 2000 arrivals expected; the standard deviation is about 45.
    assert.ok(Math.abs(a.events.length - 2000) < 200, `${a.events.length}`);
    const b = generateTrace('poisson', { limit: 20, periodMs: 1000, durationMs: 200_000, load: 0.5, seed: 2 });
    assert.notDeepEqual(a.events.slice(0, 20), b.events.slice(0, 20));
  });

  it('bursty: 2 × limit requests within a twentieth of a period, every fourth period', () => {
    const trace = generateTrace('bursty', { limit: 10, periodMs: 1000, durationMs: 12_000 });
    for (const start of [1500, 5500, 9500]) {
      const inBurst = trace.events.filter((e) => e.atMs >= start && e.atMs < start + 50).length;
      assert.ok(inBurst >= 20, `burst at ${start}: ${inBurst}`);
    }
  });

  it('rejects a bad limit or load with a coded error', () => {
    assert.throws(() => generateTrace('steady', { limit: 0, periodMs: 1000 }), { code: 'ERR_SLUICE_INVALID_LIMIT' });
    assert.throws(() => generateTrace('poisson', { limit: 1, periodMs: 1000, load: -1 }), {
      code: 'ERR_SLUICE_INVALID_OPTION',
    });
    assert.equal(isTraceName('boundary'), true);
    assert.equal(isTraceName('trace.csv'), false);
  });

  it('the seeded random generator is uniform enough and reproducible', () => {
    const random = createSeededRandom(42);
    const values = Array.from({ length: 10_000 }, random);
    assert.ok(values.every((v) => v >= 0 && v < 1));
    const mean = values.reduce((s, v) => s + v, 0) / values.length;
    assert.ok(Math.abs(mean - 0.5) < 0.02, `mean ${mean}`);
    assert.deepEqual(Array.from({ length: 5 }, createSeededRandom(42)), values.slice(0, 5));
  });
});
