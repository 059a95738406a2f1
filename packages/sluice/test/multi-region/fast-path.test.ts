/**
 * What made the multi-region store's decisions as fast as a single-region store's, kept honest:
 *  - escrow's check script has a fast path (a record whose cached share holds, one epoch): it must
 *    decide exactly as the full path, for every algorithm, through share changes, blocks, refusals
 *    and peeks — the same decisions, the same shares, the same instants;
 *  - the sync loop talks to the region's own Redis on a connection of its own, so a sync stuck on
 *    it never holds up a decision, and the store closes that connection with itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type DelayProxy, startDelayProxy } from '../../../../test/helpers/delay-proxy.js';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { type AlgorithmName, resolvePolicy } from '../../src/core/policy.js';
import { ESCROW_CHECK, ESCROW_CHECK_BY_CODE } from '../../src/stores/multi-region/escrow-lua.js';
import type { DecidedEvent } from '../../src/stores/multi-region/index.js';
import { createMultiRegionStore } from '../../src/stores/multi-region/index.js';
import type { Script } from '../../src/stores/redis/scripts.js';

const REGIONS = ['ap', 'eu', 'us'] as const;
const ALGORITHMS: AlgorithmName[] = [
  'fixed-window',
  'sliding-window',
  'sliding-log',
  'token-bucket',
  'leaky-bucket',
  'gcra',
];

/** Calls of `command` Redis has run so far. */
async function calls(client: Redis, command: string): Promise<number> {
  const m = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(String(await client.info('commandstats')));
  return Number(m?.[1] ?? 0);
}

describe('multi-region escrow: the fast path decides as the full path', () => {
  const servers: Record<string, RedisServerHandle> = {};
  const clients: Redis[] = [];
  before(async () => {
    for (const r of REGIONS) servers[r] = await startRedis();
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await Promise.all(Object.values(servers).map((s) => s.stop()));
  });
  const connect = (region: string) => {
    const c = new Redis((servers[region] as RedisServerHandle).port, '127.0.0.1');
    clients.push(c);
    return c;
  };

  /**
   * The same story in three regions, with the time injected: eu takes most of the traffic (it asks
   * for units, the others give, its share grows and later shrinks back), with costs above one, peeks,
   * blocks and refusals. Returns every decision eu made and the share it made it at.
   */
  async function story(prefix: string, fast: boolean): Promise<unknown[]> {
    const byCode = ESCROW_CHECK_BY_CODE as Record<string, Script>;
    const saved = { ...byCode };
    if (!fast) for (const code of Object.keys(byCode)) byCode[code] = ESCROW_CHECK; // no fast path in it
    let t = 1_800_000_000_000;
    const clock = { now: () => t };
    const events: DecidedEvent[] = [];
    const stores = REGIONS.map((region) =>
      createMultiRegionStore({
        region,
        regions: Object.fromEntries(REGIONS.map((r) => [r, connect(r)])),
        mode: 'escrow',
        prefix,
        clock,
        autoSync: false,
        syncIntervalMs: 100,
        maxClockSkewMs: 0,
        timeoutMs: 10_000,
        ...(region === 'eu' ? { onDecided: (e: DecidedEvent) => events.push(e) } : {}),
      }),
    );
    const [ap, eu, us] = stores as [(typeof stores)[0], (typeof stores)[0], (typeof stores)[0]];
    const out: unknown[] = [];
    try {
      for (const algorithm of ALGORITHMS) {
        const p = resolvePolicy({
          algorithm,
          limit: 30,
          period: 2000,
          ...(algorithm === 'gcra' ? { blockDuration: 300 } : {}),
        });
        for (let step = 0; step < 120; step++) {
          t += 37;
          const cost = step % 11 === 0 ? 4 : 1;
          const commit = step % 9 !== 0;
          out.push([algorithm, step, await eu.check('k', p, cost, t, commit)]);
          if (step % 13 === 0) await us.check('k', p, 1, t, true);
          if (step % 10 === 5) {
            // Checks that arrive together share a call: two policies in turn, costs above one.
            const q = resolvePolicy({ algorithm, limit: 20, period: 1000 });
            const together = [
              eu.check('k', p, 1, t, true),
              eu.check('k', q, 1, t, true),
              eu.check('k2', p, 2, t, true),
              eu.check('k', q, 1, t, true),
              eu.check('k2', p, 1, t, true),
            ];
            out.push([algorithm, step, await Promise.all(together)]);
          }
          if (step % 10 === 9) {
            for (const s of [eu, us, ap, eu]) await s.sync();
          }
        }
      }
      out.push(events.map((e) => [e.atMs, e.share]));
      return out;
    } finally {
      for (const code of Object.keys(saved)) byCode[code] = saved[code] as Script;
      await Promise.all(stores.map((s) => s.close()));
    }
  }

  it('same decisions, shares and instants for every algorithm, and the fast path did run', async () => {
    const eu = connect('eu');
    const before = await calls(eu, 'hmget');
    const full = await story('full:', false);
    const between = await calls(eu, 'hmget');
    const fast = await story('fast:', true);
    const fastReads = (await calls(eu, 'hmget')) - between;
    // Both stories sync alike (the sync's READ takes fields with HMGET too): what the fast story
    // reads beyond that is the fast path's.
    assert.ok(fastReads > between - before, 'the fast path reads a few fields (HMGET)');
    assert.deepEqual(fast, full);
    // The story moved units: eu's share grew (not a constant share all along).
    const shares = new Set((full.at(-1) as [number, number][]).map(([, s]) => s));
    assert.ok(shares.size >= 2, `shares seen: ${[...shares].join(', ')}`);
  });
});

describe('multi-region: the sync loop has its own connection to the region', () => {
  let server: RedisServerHandle;
  let peer: RedisServerHandle;
  let admin: Redis;
  before(async () => {
    server = await startRedis();
    peer = await startRedis();
    admin = new Redis(server.port, '127.0.0.1');
  });
  after(async () => {
    admin.disconnect();
    await Promise.all([server.stop(), peer.stop()]);
  });
  const named = async (name: string) =>
    String(await admin.client('LIST'))
      .split('\n')
      .filter((l) => l.includes(` name=${name} `)).length;

  for (const mode of ['eventual', 'escrow'] as const) {
    it(`${mode}: opens a second connection (duplicate()) and closes it with the store`, async () => {
      const name = `mr-${mode}`;
      const eu = new Redis(server.port, '127.0.0.1', { connectionName: name });
      const us = new Redis(peer.port, '127.0.0.1');
      // A generous deadline: the store's 50 ms default is a timing threshold on a loaded machine.
      const store = createMultiRegionStore({
        region: 'eu',
        regions: { eu, us },
        mode,
        autoSync: false,
        timeoutMs: 10_000,
      });
      try {
        try {
          const p = resolvePolicy({ algorithm: 'fixed-window', limit: 10, period: 60_000 });
          assert.equal((await store.check('k', p, 1, Date.now(), true)).allowed, true);
          await store.sync();
          assert.equal(store.syncStatus()[0]?.pushes, 1);
          assert.equal(await named(name), 2, "the decisions' connection and the sync's");
        } finally {
          await store.close();
        }
        // The server drops a closed connection on its next turn: ask again until it has (round trips, no timer).
        let left = await named(name);
        for (let i = 0; i < 1000 && left !== 1; i++) left = await named(name);
        assert.equal(left, 1, 'the store closed the one it opened, not the caller’s');
        assert.equal(eu.status, 'ready');
      } finally {
        // Even when a check fails: a client left open reconnects forever once the servers stop, and the file never ends.
        eu.disconnect();
        us.disconnect();
      }
    });
  }

  it('the first sync waits for the connection it opens, with a client that has no offline queue', async () => {
    // As the service makes its clients: connected on demand, and a command sent before the connection
    // is up fails at once. The store's copy of eu's client is made the same way.
    const options = { enableOfflineQueue: false, lazyConnect: true };
    const eu = new Redis(server.port, '127.0.0.1', options);
    const us = new Redis(peer.port, '127.0.0.1', options);
    await Promise.all([eu.connect(), us.connect()]);
    const errors: unknown[] = [];
    const store = createMultiRegionStore({
      region: 'eu',
      regions: { eu, us },
      mode: 'escrow',
      autoSync: false,
      onError: (e) => errors.push(e),
    });
    try {
      const p = resolvePolicy({ algorithm: 'fixed-window', limit: 10, period: 60_000 });
      assert.equal((await store.check('k', p, 1, Date.now(), true)).allowed, true);
      await store.sync();
      assert.deepEqual(errors, [], 'no error reported');
      assert.equal(store.syncStatus()[0]?.pushes, 1, 'the first sync landed');
      assert.equal(store.syncStatus()[0]?.pendingKeys, 0);
    } finally {
      await store.close();
      eu.disconnect();
      us.disconnect();
    }
  });

  it(
    'a first sync whose connection cannot open fails at once, not at the peer timeout',
    { timeout: 30_000 },
    async () => {
      const own = await startRedis();
      const options = { enableOfflineQueue: false, lazyConnect: true, retryStrategy: () => 200 };
      const eu = new Redis(own.port, '127.0.0.1', options);
      const us = new Redis(peer.port, '127.0.0.1', options);
      await Promise.all([eu.connect(), us.connect()]);
      eu.on('error', () => {});
      const store = createMultiRegionStore({
        region: 'eu',
        regions: { eu, us },
        mode: 'escrow',
        autoSync: false,
        peerTimeoutMs: 600_000,
        onError: () => {},
      });
      try {
        const p = resolvePolicy({ algorithm: 'fixed-window', limit: 10, period: 60_000 });
        assert.equal((await store.check('k', p, 1, Date.now(), true)).allowed, true);
        await own.stop();
        // Without the bound, the sync's read would wait for a connection that never comes (the test's timeout).
        await store.sync();
        assert.equal(store.syncStatus()[0]?.pendingKeys, 1, 'kept for the next sync');
      } finally {
        await store.close();
        eu.disconnect();
        us.disconnect();
      }
    },
  );

  it('a sync stuck on its connection does not hold up decisions (given syncClient)', async () => {
    // The sync's connection to this region goes through a link we can cut: its reads hang there.
    const link: DelayProxy = await startDelayProxy(server.port, 0);
    const eu = new Redis(server.port, '127.0.0.1');
    const syncClient = new Redis(link.port, '127.0.0.1');
    const us = new Redis(peer.port, '127.0.0.1');
    const store = createMultiRegionStore({
      region: 'eu',
      regions: { eu, us },
      mode: 'escrow',
      autoSync: false,
      syncClient,
      peerTimeoutMs: 20_000,
    });
    try {
      const p = resolvePolicy({ algorithm: 'token-bucket', limit: 100, period: 60_000 });
      await syncClient.ping();
      assert.equal((await store.check('k', p, 1, Date.now(), true)).allowed, true);
      link.cut();
      let synced = false;
      const sync = store.sync().then(() => {
        synced = true;
      });
      // Decisions go on, one after another, while the sync waits on its own connection.
      try {
        for (let i = 0; i < 5; i++) assert.equal((await store.check('k', p, 1, Date.now(), true)).allowed, true);
        assert.equal(synced, false, 'the sync is still waiting');
      } finally {
        link.heal();
      }
      await sync;
    } finally {
      await store.close();
      for (const c of [eu, syncClient, us]) c.disconnect();
      await link.close();
    }
  });
});
