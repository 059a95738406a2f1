import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSeededRandom } from '../../../server/src/tools/simulate/random.js';
import { fullJitterBackoff } from './backoff.js';

describe('fullJitterBackoff', () => {
  it('stays within [0, min(max, base × 2^retry))', () => {
    const random = createSeededRandom(11);
    for (let retry = 0; retry < 12; retry++) {
      const ceiling = Math.min(5000, 100 * 2 ** retry);
      for (let i = 0; i < 500; i++) {
        const wait = fullJitterBackoff(retry, 100, 5000, random);
        assert.ok(Number.isInteger(wait) && wait >= 0 && wait < ceiling, `retry ${retry}: ${wait}`);
      }
    }
    assert.equal(
      fullJitterBackoff(2000, 100, 5000, () => 0.5),
      2500,
      'no overflow past the cap',
    );
    assert.equal(
      fullJitterBackoff(3, 100, 5000, () => 0),
      0,
    );
  });

  it('spreads waits uniformly over the whole range (fixed seed, 20 000 draws)', () => {
    const random = createSeededRandom(2024);
    const ceiling = 800; // retry 3, base 100
    const n = 20_000;
    const waits = Array.from({ length: n }, () => fullJitterBackoff(3, 100, 10_000, random));
    const mean = waits.reduce((s, w) => s + w, 0) / n;
    // Uniform on [0, 800): mean 400, standard error of the mean ≈ 231/√n ≈ 1.6.
    assert.ok(Math.abs(mean - ceiling / 2) < 8, `mean ${mean}`);
    const deciles = new Array<number>(10).fill(0);
    for (const w of waits) deciles[Math.floor((w / ceiling) * 10)]! += 1;
    // Each decile expects 2000 ± 42 (binomial sd): allow 5 sd.
    for (const [i, count] of deciles.entries()) assert.ok(Math.abs(count - n / 10) < 220, `decile ${i}: ${count}`);
    assert.ok(Math.min(...waits) < 8 && Math.max(...waits) > 792, 'reaches both ends');
    // Full jitter, not "equal jitter": many waits are short, which is what spreads a herd.
    assert.ok(waits.filter((w) => w < ceiling / 4).length > n * 0.2);
  });

  it('doubles the ceiling each retry until the cap', () => {
    const random = createSeededRandom(5);
    const maxOf = (retry: number) =>
      Math.max(...Array.from({ length: 2000 }, () => fullJitterBackoff(retry, 50, 1000, random)));
    assert.ok(maxOf(0) < 50 && maxOf(0) > 45);
    assert.ok(maxOf(2) < 200 && maxOf(2) > 190);
    assert.ok(maxOf(10) < 1000 && maxOf(10) > 980);
  });
});
