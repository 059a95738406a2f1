/** Misuse of the multi-region store gets a coded error that names the option, never a crash later. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createMultiRegionStore } from '../../src/stores/multi-region/index.js';

describe('multi-region options', () => {
  let server: RedisServerHandle;
  let client: Redis;
  before(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1');
  });
  after(async () => {
    client?.disconnect();
    await server?.stop();
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ['mode', { mode: 'strong' }, 'mode'],
    ['region not in regions', { region: 'mars' }, 'region'],
    ['a region name with a brace', { regions: { 'e{u': 1 } }, 'regions'],
    ['a client that is not one', { regions: { eu: {} } }, 'regions.eu'],
    ['sync interval', { syncIntervalMs: 0 }, 'syncIntervalMs'],
    ['prefix with a brace', { prefix: 'a{' }, 'prefix'],
  ];
  for (const [what, override, option] of bad) {
    it(`rejects ${what} with ERR_SLUICE_INVALID_OPTION naming ${option}`, () => {
      assert.throws(
        () => createMultiRegionStore({ region: 'eu', regions: { eu: client }, mode: 'eventual', ...override } as never),
        (e: { code?: string; option?: string }) => e.code === 'ERR_SLUICE_INVALID_OPTION' && e.option === option,
      );
    });
  }

  it('eventual mode refuses algorithms it cannot merge, with a code and what to do instead', async () => {
    const store = createMultiRegionStore({ region: 'eu', regions: { eu: client }, mode: 'eventual', autoSync: false });
    try {
      const gcra = resolvePolicy({ algorithm: 'gcra', limit: 5, period: 1000 });
      assert.equal(store.supports(gcra), false);
      assert.equal(store.supports({ algorithm: 'sliding-window', limit: 5, period: 1000 }), true);
      await assert.rejects(store.check('k', gcra, 1, Date.now(), true), (e: { code?: string; message: string }) => {
        return e.code === 'ERR_SLUICE_MULTI_REGION_ALGORITHM' && e.message.includes("mode 'escrow'");
      });
    } finally {
      await store.close();
    }
  });

  it('eventual mode refuses a cost that is not whole, with a code, and only that check', async () => {
    // A generous deadline: the store's 50 ms default is a timing threshold on a loaded machine.
    const store = createMultiRegionStore({
      region: 'eu',
      regions: { eu: client },
      mode: 'eventual',
      autoSync: false,
      timeoutMs: 10_000,
    });
    try {
      const p = resolvePolicy({ algorithm: 'fixed-window', limit: 5, period: 1000 });
      const coded = (e: { code?: string }) => e.code === 'ERR_SLUICE_INVALID_COST';
      await assert.rejects(store.check('k', p, 1.5, Date.now(), true), coded);
      await assert.rejects(store.check('k', p, -1, Date.now(), true), coded);
      await assert.rejects(store.refund('k', p, 0.5, Date.now()), coded);
      assert.equal((await store.check('k', p, 2, Date.now(), true)).remaining, 3, 'a whole cost still counts');
      // Checks arriving together share a script call: a refused one fails alone, not the others sent with it.
      const gcra = resolvePolicy({ algorithm: 'gcra', limit: 5, period: 1000 });
      const now = Date.now();
      const together = await Promise.allSettled([
        store.check('a', p, 1, now, true),
        store.check('b', p, 1, now, true),
        store.check('c', p, 0.5, now, true),
        store.check('d', gcra, 1, now, true),
        store.check('e', p, 1, now, true),
      ]);
      assert.deepEqual(
        together.map((r) => (r.status === 'fulfilled' ? r.value.allowed : (r.reason as { code: string }).code)),
        [true, true, 'ERR_SLUICE_INVALID_COST', 'ERR_SLUICE_MULTI_REGION_ALGORITHM', true],
      );
    } finally {
      await store.close();
    }
  });

  it('states its bound: N·L when the rate is unknown, the limit itself in escrow', async () => {
    const regions = { eu: client, us: client, ap: client };
    const eventual = createMultiRegionStore({ region: 'eu', regions, mode: 'eventual', autoSync: false });
    const escrow = createMultiRegionStore({ region: 'eu', regions, mode: 'escrow', autoSync: false });
    try {
      const p = { limit: 100, period: 60_000 };
      assert.equal(eventual.bound(p).maxPerWindow, 300);
      const b = eventual.bound(p, { ratePerSecond: 10 });
      assert.equal(b.maxPerWindow, 100 + Math.min(200, Math.ceil((10 * b.lagMs) / 1000)));
      assert.equal(escrow.bound({ ...p, algorithm: 'gcra' }).maxPerWindow, 100);
    } finally {
      await eventual.close();
      await escrow.close();
    }
  });
});
