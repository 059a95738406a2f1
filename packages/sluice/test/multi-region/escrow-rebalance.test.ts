/**
 * Escrow mode, deterministic: three regions (two application servers in the busy one), skewed load
 * on a manual clock, requests stamped up to 60 ms late and arriving out of order, syncs at random
 * moments. Shares move to the busy region, and the regions together never admit more than the
 * limit — by each algorithm's own definition of it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createManualClock } from '../../src/core/clock.js';
import { type AlgorithmName, resolvePolicy } from '../../src/core/policy.js';
import { createMultiRegionStore, type MultiRegionStore } from '../../src/stores/multi-region/index.js';
import { bucketExcess, maxInAnyPeriod, maxSlidingEstimate, perWindow } from './limits-check.js';

const LIMIT = 30;
const PERIOD = 1000;

/** A small deterministic generator (a test must be repeatable). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

describe('escrow: shares move to the traffic, never over the limit', () => {
  const names = ['ap', 'eu', 'us'];
  let servers: RedisServerHandle[] = [];
  let clients: Record<string, Redis> = {};
  before(async () => {
    servers = await Promise.all(names.map(() => startRedis()));
    clients = Object.fromEntries(
      names.map((n, i) => [n, new Redis((servers[i] as RedisServerHandle).port, '127.0.0.1')]),
    );
  });
  after(async () => {
    for (const c of Object.values(clients)) c.disconnect();
    await Promise.all(servers.map((s) => s.stop()));
  });

  for (const [algorithm, seed] of [
    ['fixed-window', 1],
    ['sliding-window', 2],
    ['sliding-log', 3],
    ['token-bucket', 4],
    ['gcra', 5],
  ] as [AlgorithmName, number][]) {
    it(`${algorithm}: skewed load, late and reordered stamps, random syncs`, async () => {
      const clock = createManualClock(1_800_000_000_000);
      const admitted: number[] = [];
      let lastShare = 0;
      const store = (region: string) =>
        createMultiRegionStore({
          region,
          regions: clients,
          mode: 'escrow',
          prefix: `rb:${algorithm}:`,
          autoSync: false,
          clock,
          syncIntervalMs: 100,
          maxClockSkewMs: 0,
          timeoutMs: 5000,
          onDecided: (e) => {
            if (e.decision.allowed) admitted.push(e.atMs);
            if (region === 'eu') lastShare = e.share ?? 0;
          },
        });
      const stores: Record<string, MultiRegionStore> = {
        ap: store('ap'),
        eu: store('eu'),
        eu2: store('eu'),
        us: store('us'),
      };
      const p = resolvePolicy({ algorithm, limit: LIMIT, period: PERIOD });
      const rnd = random(seed);
      try {
        for (let step = 0; step < 120; step++) {
          const now = clock.now();
          const requests = ['eu', 'eu2', 'eu', 'eu2', 'eu', 'eu2'];
          if (step % 3 === 0 || rnd() < 0.2) requests.push('us', 'ap');
          requests.sort(() => rnd() - 0.5);
          for (const r of requests)
            await (stores[r] as MultiRegionStore).check('k', p, 1, now - Math.floor(rnd() * 60), true);
          for (const n of Object.keys(stores).sort(() => rnd() - 0.5)) {
            if (rnd() < 0.7) await (stores[n] as MultiRegionStore).sync();
          }
          clock.advance(100);
        }
      } finally {
        for (const s of Object.values(stores)) await s.close();
      }
      const ts = admitted.sort((a, b) => a - b);
      assert.ok(lastShare > LIMIT / 2, `the busy region's share grew (to ${lastShare})`);
      if (algorithm === 'fixed-window') {
        for (const [w, n] of perWindow(ts, PERIOD)) assert.ok(n <= LIMIT, `window ${w}: ${n}`);
      } else if (algorithm === 'sliding-log') {
        assert.ok(maxInAnyPeriod(ts, PERIOD) <= LIMIT);
      } else if (algorithm === 'sliding-window') {
        assert.ok(maxSlidingEstimate(ts, PERIOD) <= LIMIT);
      } else {
        assert.ok(bucketExcess(ts, LIMIT, LIMIT, PERIOD) <= 0);
      }
    });
  }
});
