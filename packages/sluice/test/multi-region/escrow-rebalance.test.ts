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
import { assertLimitKept, perWindow } from './limits-check.js';

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

/** A redis-server per region (ap, eu, us) for the tests of one suite; clients read after `before`. */
function threeRegions(): { clients: Record<string, Redis> } {
  const names = ['ap', 'eu', 'us'];
  let servers: RedisServerHandle[] = [];
  const out = { clients: {} as Record<string, Redis> };
  before(async () => {
    servers = await Promise.all(names.map(() => startRedis()));
    out.clients = Object.fromEntries(
      names.map((n, i) => [n, new Redis((servers[i] as RedisServerHandle).port, '127.0.0.1')]),
    );
  });
  after(async () => {
    for (const c of Object.values(out.clients)) c.disconnect();
    await Promise.all(servers.map((s) => s.stop()));
  });
  return out;
}

describe('escrow: shares move to the traffic, never over the limit', () => {
  const redis = threeRegions();

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
          regions: redis.clients,
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
      assertLimitKept(ts, algorithm, LIMIT, PERIOD);
    });
  }
});

/**
 * A load that moves: all of it from one region at a time, eu → us → ap, three windows each, twice
 * the limit offered. Idle regions lend what they do not use, so the busy region's share follows the
 * load within a few syncs; the limit is never exceeded, and what is admitted is stated and held.
 */
describe('escrow: shares follow a load that moves between regions', () => {
  const redis = threeRegions();

  /** The share of the limit a moving load gets, per algorithm (measured on this scenario, then held). */
  const FLOOR: Record<string, number> = {
    'fixed-window': 0.9,
    'sliding-window': 0.85,
    'sliding-log': 0.9,
    'token-bucket': 0.75,
    gcra: 0.75,
  };

  for (const algorithm of [
    'fixed-window',
    'sliding-window',
    'sliding-log',
    'token-bucket',
    'gcra',
  ] as AlgorithmName[]) {
    it(`${algorithm}: eu → us → ap, three windows each`, async () => {
      const clock = createManualClock(1_800_000_000_000);
      const admitted: number[] = [];
      const store = (region: string) =>
        createMultiRegionStore({
          region,
          regions: redis.clients,
          mode: 'escrow',
          prefix: `mv:${algorithm}:`,
          autoSync: false,
          clock,
          syncIntervalMs: 100,
          timeoutMs: 5000,
          onDecided: (e) => {
            if (e.decision.allowed) admitted.push(e.atMs);
          },
        });
      const stores: Record<string, MultiRegionStore> = { ap: store('ap'), eu: store('eu'), us: store('us') };
      const p = resolvePolicy({ algorithm, limit: LIMIT, period: PERIOD });
      const order = ['eu', 'us', 'ap'];
      const start = Math.ceil(clock.now() / PERIOD) * PERIOD;
      clock.advance(start - clock.now());
      const STEP = 25;
      try {
        for (let t = 0; t < 9 * PERIOD; t += STEP) {
          const busy = stores[order[Math.floor(t / (3 * PERIOD))] as string] as MultiRegionStore;
          // Twice the limit per period, from the busy region only.
          const n = Math.floor(((t + STEP) * 2 * LIMIT) / PERIOD) - Math.floor((t * 2 * LIMIT) / PERIOD);
          for (let i = 0; i < n; i++) await busy.check('k', p, 1, clock.now(), true);
          if (t % 100 === 0) for (const s of Object.values(stores)) await s.sync();
          clock.advance(STEP);
        }
      } finally {
        for (const s of Object.values(stores)) await s.close();
      }
      const ts = admitted.sort((a, b) => a - b);
      const counts = [...perWindow(ts, PERIOD).entries()].sort((a, b) => a[0] - b[0]).map(([, n]) => n);
      const fraction = ts.length / (9 * LIMIT);
      assertLimitKept(ts, algorithm, LIMIT, PERIOD);
      console.log(`# ${algorithm}: admitted ${counts.join(', ')} = ${(100 * fraction).toFixed(0)} % of the limit`);
      assert.ok(
        fraction >= (FLOOR[algorithm] as number),
        `${algorithm}: admitted ${(100 * fraction).toFixed(0)} % of the limit under the moving load (${counts.join(', ')})`,
      );
    });
  }
});
