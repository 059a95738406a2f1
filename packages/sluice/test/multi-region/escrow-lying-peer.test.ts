/**
 * Escrow mode against a peer whose record lies about the units it gave (issue 37, item 4): a peer
 * region's Redis claims to have given eu 100,000 units of a limit of 10 an hour. eu credited it and
 * admitted 580 of 580; a credit now counts only as far as the limit allows, so eu admits at most the
 * limit in the window, whatever the peer says. On injected time, syncs run by hand.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createManualClock } from '../../src/core/clock.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createMultiRegionStore } from '../../src/stores/multi-region/index.js';
import { leaseRecordKey, tagOf } from '../../src/stores/multi-region/keys.js';

const LIMIT = 10;
const HOUR = 3_600_000;
/** An hour's start: every check of a case falls in one fixed window. */
const T0 = 500_000 * HOUR;

describe('escrow: a lying peer record cannot raise a share past the limit', () => {
  let servers: RedisServerHandle[] = [];
  let eu: Redis;
  let us: Redis;
  before(async () => {
    servers = await Promise.all([startRedis(), startRedis()]);
    eu = new Redis((servers[0] as RedisServerHandle).port, '127.0.0.1');
    us = new Redis((servers[1] as RedisServerHandle).port, '127.0.0.1');
  });
  after(async () => {
    eu.disconnect();
    us.disconnect();
    await Promise.all(servers.map((s) => s.stop()));
  });

  // The total a corrupted record claims: a large whole number (credited, then capped), and one past
  // what a Redis integer reply can carry (refused as a bad reply before anything is credited).
  for (const claim of ['100000', '1e300'])
    it(`the peer claims ${claim} units given`, async () => {
      const clock = createManualClock(T0);
      const prefix = `lie${claim.length}:`;
      const errors: string[] = [];
      const shares: number[] = [];
      const store = createMultiRegionStore({
        region: 'eu',
        regions: { eu, us },
        mode: 'escrow',
        prefix,
        autoSync: false,
        clock,
        syncIntervalMs: 100,
        maxClockSkewMs: 0,
        timeoutMs: 5000,
        onError: (e) => errors.push(e.code),
        onDecided: (e) => shares.push(e.share ?? 0),
      });
      const p = resolvePolicy({ algorithm: 'fixed-window', limit: LIMIT, period: HOUR });
      let admitted = 0;
      const offer = async (n: number) => {
        for (let i = 0; i < n; i++) if ((await store.check('k', p, 1, clock.now(), true)).allowed) admitted++;
      };
      try {
        await offer(1);
        // us's record, as a corrupted (or lying) peer holds it: 100,000 units given to eu's record.
        const rkey = leaseRecordKey(tagOf(prefix, 'k'), p.id);
        const euInc = await eu.hget(rkey, 'inc');
        assert.ok(euInc, 'eu holds its record');
        await us.hset(`${rkey}~`, 'g:eu', claim, 'gi:eu', euInc, 'gt:eu', String(clock.now()));
        // eu needs more than its share: the sync asks us, and us answers with the claimed total.
        await offer(40);
        clock.advance(100);
        await store.sync();
        clock.advance(1000);
        await offer(600);
        clock.advance(100);
        await store.sync();
        clock.advance(1000);
        await offer(600);
      } finally {
        await store.close();
      }
      assert.ok(admitted <= LIMIT, `eu admitted ${admitted} in one window against a limit of ${LIMIT}`);
      assert.ok(Math.max(...shares) <= LIMIT, `eu's share reached ${Math.max(...shares)}`);
      if (claim === '1e300') {
        assert.ok(errors.includes('ERR_SLUICE_MULTI_REGION_BAD_REPLY'), `a coded error (${errors.join(', ')})`);
      }
    });
});
