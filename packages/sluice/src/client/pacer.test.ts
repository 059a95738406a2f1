import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../core/clock.js';
import { resolvePolicy } from '../core/policy.js';
import { createPacer } from './pacer.js';

const policy = (limit: number, period: number, burst: number) =>
  resolvePolicy({ algorithm: 'token-bucket', limit, period, burst });

describe('createPacer', () => {
  it('spaces sends evenly at the rate (burst 1)', async () => {
    const clock = createManualClock(0);
    const pacer = createPacer(policy(10, 1000, 1), clock, async (ms) => clock.advance(ms));
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      await pacer.take();
      times.push(clock.now());
    }
    assert.deepEqual(
      times,
      Array.from({ length: 20 }, (_, i) => i * 100),
    );
  });

  it('lets a burst go back to back, then the rate', async () => {
    const clock = createManualClock(0);
    const pacer = createPacer(policy(4, 1000, 3), clock, async (ms) => clock.advance(ms));
    const times: number[] = [];
    for (let i = 0; i < 6; i++) {
      await pacer.take();
      times.push(clock.now());
    }
    assert.deepEqual(times, [0, 0, 0, 250, 500, 750]);
  });

  it('serves concurrent callers first come, first served', async () => {
    const clock = createManualClock(0);
    const pacer = createPacer(policy(5, 1000, 1), clock, async (ms) => clock.advance(ms));
    const order: [number, number][] = [];
    await Promise.all(Array.from({ length: 8 }, (_, i) => pacer.take().then(() => order.push([i, clock.now()]))));
    assert.deepEqual(
      order,
      Array.from({ length: 8 }, (_, i) => [i, i * 200]),
    );
  });

  it('an abort takes the caller out of the queue at once, without taking a token', async () => {
    const clock = createManualClock(0);
    const pending: { ms: number; wake: () => void }[] = [];
    const sleep = (ms: number) =>
      new Promise<void>((resolve) =>
        pending.push({
          ms,
          wake: () => {
            clock.advance(ms);
            resolve();
          },
        }),
      );
    const pacer = createPacer(policy(10, 1000, 1), clock, sleep);
    await pacer.take(); // the one token
    const controller = new AbortController();
    const b = pacer.take(controller.signal);
    const c = pacer.take();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      pending.map((p) => p.ms),
      [100],
      'b waits for the next token',
    );
    controller.abort(new Error('stop'));
    await assert.rejects(b, /stop/);
    await new Promise((r) => setImmediate(r));
    // c now waits for the token b would have had: 100 ms, not 200.
    assert.deepEqual(
      pending.map((p) => p.ms),
      [100, 100],
    );
    pending[1]?.wake();
    await c;
    assert.equal(clock.now(), 100);
    await assert.rejects(pacer.take(AbortSignal.abort(new Error('already'))), /already/);
  });
});
