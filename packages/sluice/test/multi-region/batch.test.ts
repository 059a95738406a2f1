/**
 * Checks that arrive together share one script call (stores/multi-region/batch.ts) and decide
 * exactly as if sent one by one: many concurrent callers on one key, in one region, admit exactly
 * the limit; mixed algorithms and keys in one batch each get their own decision.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { type AlgorithmName, resolvePolicy } from '../../src/core/policy.js';
import { createMultiRegionStore } from '../../src/stores/multi-region/index.js';

describe('multi-region: concurrent checks share script calls', () => {
  let server: RedisServerHandle;
  let client: Redis;
  before(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1');
  });
  after(async () => {
    client.disconnect();
    await server.stop();
  });
  /** A one-region store on the test's Redis, under its own prefix. */
  const storeOf = (mode: 'eventual' | 'escrow', prefix: string) =>
    createMultiRegionStore({ region: 'eu', regions: { eu: client }, mode, prefix, timeoutMs: 10_000 });

  for (const mode of ['eventual', 'escrow'] as const) {
    it(`${mode}: 200 concurrent checks of limit 30 admit exactly 30, in fewer calls than checks`, async () => {
      const store = storeOf(mode, `b:${mode}:`);
      try {
        await store.ready?.();
        const before = Number(
          /calls=(\d+)/.exec(String(await client.info('commandstats')).split('evalsha')[1] ?? '')?.[1] ?? 0,
        );
        const p = resolvePolicy({ algorithm: 'fixed-window', limit: 30, period: 60_000 });
        const now = 1_800_000_000_000;
        const ds = await Promise.all(Array.from({ length: 200 }, () => store.check('k', p, 1, now, true)));
        const after = Number(
          /calls=(\d+)/.exec(String(await client.info('commandstats')).split('evalsha')[1] ?? '')?.[1] ?? 0,
        );
        assert.equal(ds.filter((d) => d.allowed).length, 30);
        assert.deepEqual(
          ds.map((d) => d.remaining).slice(0, 30),
          Array.from({ length: 30 }, (_, i) => 29 - i),
          'in arrival order',
        );
        assert.ok(after - before < 200, `${after - before} script calls for 200 checks`);
      } finally {
        await store.close();
      }
    });
  }

  it('escrow: one batch with several algorithms and keys decides each as alone', async () => {
    const store = storeOf('escrow', 'b:mix:');
    try {
      const algorithms: AlgorithmName[] = ['fixed-window', 'token-bucket', 'sliding-log', 'gcra'];
      const now = 1_800_000_000_000;
      const checks = algorithms.flatMap((algorithm) =>
        Array.from({ length: 8 }, () =>
          store.check(algorithm, resolvePolicy({ algorithm, limit: 5, period: 60_000 }), 1, now, true),
        ),
      );
      const ds = await Promise.all(checks);
      for (const [i, algorithm] of algorithms.entries()) {
        assert.equal(ds.slice(i * 8, i * 8 + 8).filter((d) => d.allowed).length, 5, algorithm);
      }
    } finally {
      await store.close();
    }
  });

  it('a closed store refuses checks with ERR_SLUICE_STORE_CLOSED (a rejected promise, not a throw)', async () => {
    const store = storeOf('escrow', 'b:closed:');
    await store.close();
    const p = resolvePolicy({ algorithm: 'fixed-window', limit: 5, period: 60_000 });
    let answer: Promise<unknown> | undefined;
    assert.doesNotThrow(() => {
      answer = store.check('k', p, 1, 1_800_000_000_000, true);
    });
    await assert.rejects(answer as Promise<unknown>, { code: 'ERR_SLUICE_STORE_CLOSED' });
  });
});
