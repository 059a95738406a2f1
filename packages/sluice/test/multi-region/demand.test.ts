/**
 * Escrow's demand estimate is counted in each process (stores/multi-region/demand.ts) and added to the
 * lease record when the sync reads it. Decayed sums add up, so what the record holds after the syncs
 * must be exactly the decayed sum of every unit asked in the region, by every process — what a write
 * on every decision would have left there.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createManualClock } from '../../src/core/clock.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { DemandLedger } from '../../src/stores/multi-region/demand.js';
import { demandTauMs } from '../../src/stores/multi-region/escrow-share.js';
import { createMultiRegionStore } from '../../src/stores/multi-region/index.js';
import { leaseRecordKey, tagOf } from '../../src/stores/multi-region/keys.js';

describe('escrow demand, counted in the process', () => {
  it('a ledger decays its sum between instants, adds at one instant, and forgets what it hands over', () => {
    const ledger = new DemandLedger(10);
    ledger.add('r', 2, 1000, 100);
    ledger.add('r', 1, 1000, 100);
    ledger.add('r', 3, 1100, 100);
    const [sum, at, tau] = ledger.take('r').map(Number);
    assert.equal(at, 1100);
    assert.equal(tau, 100);
    assert.ok(Math.abs((sum as number) - (3 * Math.exp(-1) + 3)) < 1e-12, String(sum));
    assert.deepEqual(ledger.take('r'), ['0', '0', '0'], 'taken once');
  });

  it('past its bound a ledger drops the record counted first', () => {
    const ledger = new DemandLedger(2);
    for (const r of ['a', 'b', 'c']) ledger.add(r, 1, 1000, 100);
    assert.deepEqual(ledger.take('a'), ['0', '0', '0']);
    assert.deepEqual(ledger.take('c'), ['1', '1000', '100']);
  });

  let server: RedisServerHandle;
  const clients: Redis[] = [];
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await server.stop();
  });
  const connect = (db: number) => {
    const c = new Redis(server.port, '127.0.0.1', { db });
    clients.push(c);
    return c;
  };

  it("two processes in one region: after their syncs the record holds the decayed sum of both processes' units", async () => {
    const now = 1_800_000_000_000;
    const clock = createManualClock(now);
    const regions = () => ({ eu: connect(1), us: connect(2) });
    const options = { region: 'eu', mode: 'escrow', prefix: 'dm:', autoSync: false, clock, timeoutMs: 10_000 } as const;
    const a = createMultiRegionStore({ ...options, regions: regions() });
    const b = createMultiRegionStore({ ...options, regions: regions() });
    const policy = resolvePolicy({ algorithm: 'fixed-window', limit: 1000, period: 60_000 });
    const tau = demandTauMs(policy, 1000);
    const asked: [number, number][] = [];
    try {
      // Interleaved, at increasing instants, with costs above one; a sync of each in the middle.
      const plan: ['a' | 'b', number, number][] = [
        ['a', 0, 1],
        ['b', 150, 2],
        ['a', 400, 3],
        ['b', 900, 1],
        ['a', 2500, 4],
        ['b', 2600, 2],
      ];
      for (const [who, dt, cost] of plan) {
        await (who === 'a' ? a : b).check('user:1', policy, cost, now + dt, true);
        asked.push([now + dt, cost]);
        if (dt === 900) {
          await a.sync();
          await b.sync();
        }
      }
      await a.sync();
      await b.sync();
      const record = await connect(1).hmget(leaseRecordKey(tagOf('dm:', 'user:1'), policy.id), 'dr', 'dt');
      const [dr, dt] = record.map(Number) as [number, number];
      assert.equal(dt, now + 2600, 'as of the latest unit');
      const exact = asked.reduce((s, [t, cost]) => s + cost * Math.exp((t - dt) / tau), 0);
      assert.ok(Math.abs(dr - exact) < 1e-9 * exact, `${dr} vs ${exact}`);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
