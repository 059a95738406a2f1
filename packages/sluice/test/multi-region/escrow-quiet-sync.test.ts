/**
 * Escrow's sync sends a peer only the lease records it would learn something from (sent-records.ts):
 * every decision marks its record changed, but a peer keeps only the incarnation, the units given to
 * it and asks. Re-sending everything in use each sync cost this region's Redis and process some 100 µs
 * per record, in bursts that held up decisions. Real Redis servers, one per region, on a manual clock.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { createManualClock } from '../../src/core/clock.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { proofMs } from '../../src/stores/multi-region/escrow-share.js';
import { createMultiRegionStore, type MultiRegionStore } from '../../src/stores/multi-region/index.js';
import { scriptsRun, startTopology, type Topology } from './harness.js';

const REGIONS = ['ap', 'eu', 'us'];
const KEYS = Array.from({ length: 20 }, (_, i) => `user-${i}`);

describe('escrow sync: a peer is sent what it does not hold yet', () => {
  let topology: Topology;
  /** This process's view of each region's Redis (directly, not through the links). */
  let direct: Record<string, Redis>;
  /** Clients the stores were given (a store leaves its clients to their owner). */
  const clients: Redis[] = [];
  before(async () => {
    topology = await startTopology(REGIONS, 1);
    direct = Object.fromEntries(REGIONS.map((r) => [r, new Redis(topology.servers[r]?.port as number, '127.0.0.1')]));
  });
  after(async () => {
    for (const c of [...clients, ...Object.values(direct)]) c.disconnect();
    await topology.stop();
  });

  /** eu's store, reaching the peers through the links; each test its own prefix. */
  function euStore(prefix: string, clock: ReturnType<typeof createManualClock>): MultiRegionStore {
    const ports = topology.portsFrom('eu');
    const regions = Object.fromEntries(REGIONS.map((r) => [r, new Redis(ports[r] as number, '127.0.0.1')]));
    clients.push(...Object.values(regions));
    return createMultiRegionStore({
      region: 'eu',
      regions,
      mode: 'escrow',
      prefix,
      autoSync: false,
      clock,
      syncIntervalMs: 100,
      timeoutMs: 5000,
      peerTimeoutMs: 300,
    });
  }
  const peerScripts = async () => await scriptsRun([direct.us as Redis, direct.ap as Redis]);

  it('records that moved no units are not pushed; an ask goes at once; what moved units is renewed', async () => {
    const clock = createManualClock(1_800_000_000_000);
    const store = euStore('quiet:', clock);
    const p = resolvePolicy({ algorithm: 'fixed-window', limit: 300, period: 1000 });
    const decideAll = async () => {
      for (const k of KEYS) assert.equal((await store.check(k, p, 1, clock.now(), true)).allowed, true);
    };
    try {
      // Every record is within its share and nothing moved between regions: nothing for the peers.
      const before = await peerScripts();
      for (let i = 0; i < 2; i++) {
        await decideAll();
        await store.sync();
        clock.advance(10);
      }
      assert.equal((await peerScripts()) - before, 0, 'no units moved: no merge ran at the peers');
      const us = store.syncStatus().find((s) => s.region === 'us');
      assert.equal(us?.down, false);
      assert.equal(us?.pushes, 2, 'the peer was still reached at each sync (and counts as synced)');
      assert.equal(us?.pendingKeys, 0);

      // An ask is news: far more demand on one key than eu's third of the limit.
      const asked = await peerScripts();
      for (let i = 0; i < 150; i++) await store.check('user-0', p, 1, clock.now(), true);
      await store.sync();
      assert.ok((await peerScripts()) > asked, 'the record asking for units was pushed');
      // The units it got count at once for it, and its next sync sends nothing new.
      clock.advance(1000);
      await decideAll();
      await store.sync();
      const beforeRenewal = await peerScripts();
      clock.advance(10);
      await decideAll();
      await store.sync();
      assert.equal((await peerScripts()) - beforeRenewal, 0, 'nothing new since');

      // Past the renewal time, the record that received units goes again to each peer that gave
      // (both peers' proof of it, and its proof of them); the other 19 do not.
      clock.advance(proofMs(p) / 8);
      await decideAll();
      await store.sync();
      assert.equal((await peerScripts()) - beforeRenewal, 2, 'one record renewed at each peer');
    } finally {
      await store.close();
    }
  });

  it('with nothing to send, a peer cut off is still reported down, and up again once healed', async () => {
    const clock = createManualClock(1_800_000_000_000);
    const store = euStore('cut:', clock);
    const p = resolvePolicy({ algorithm: 'token-bucket', limit: 300, period: 1000 });
    try {
      for (let i = 0; i < 3; i++) {
        for (const k of KEYS) await store.check(k, p, 1, clock.now(), true);
        await store.sync();
        clock.advance(10);
      }
      topology.cut('us');
      for (const k of KEYS) await store.check(k, p, 1, clock.now(), true);
      await store.sync();
      const cut = store.syncStatus();
      assert.equal(cut.find((s) => s.region === 'us')?.down, true);
      assert.equal(cut.find((s) => s.region === 'us')?.pendingKeys, KEYS.length, 'kept for when it is back');
      assert.equal(cut.find((s) => s.region === 'ap')?.down, false);
      topology.heal('us');
      // The client to us reconnects on its own schedule: sync until it has (bounded).
      const until = Date.now() + 10_000;
      do {
        await new Promise((resolve) => setTimeout(resolve, 50));
        await store.sync();
      } while (store.syncStatus().find((s) => s.region === 'us')?.down && Date.now() < until);
      const healed = store.syncStatus().find((s) => s.region === 'us');
      assert.equal(healed?.down, false);
      assert.equal(healed?.pendingKeys, 0);
    } finally {
      topology.heal('us');
      await store.close();
    }
  });
});
