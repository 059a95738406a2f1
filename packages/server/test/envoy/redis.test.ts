/**
 * envoy ratelimit's Redis-backed integration cases (test/integration/integration_test.go:
 * testBasicBaseConfig over TestBasicConfig, TestBasicAuthConfig, TestBasicTLSConfig,
 * TestBasicAuthConfigWithRedisCluster and TestBasicAuthConfigWithRedisSentinel), reproduced against the
 * real `sluice serve` on both gRPC servers, over real redis-server processes in each layout envoy uses:
 * one Redis with a key prefix, a second Redis for per-second limits, passwords, TLS (with a client
 * certificate), a 3-master Cluster and Sentinels — with and without the local cache.
 *
 * envoy reads its counters from statsd: its per-key total_hits, over_limit and near_limit are
 * sluice_decisions_total's outcomes of the rule, and its local cache hits are
 * `sluice_local_cache_hits_total`; both are asserted where envoy asserts them.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { unique } from '../integration/helpers.js';
import {
  createRuntime,
  type EnvoyService,
  FIXTURES,
  NO_LIMIT,
  overHourLimitOfTwo,
  overMinuteLimit,
  type Runtime,
  resetMs,
  shape,
  startEnvoy,
  status,
  withinOneWindow,
} from './harness.js';
import { type Backing, LAYOUTS } from './redis-layouts.js';

/** The local cache's hits so far (sluice_local_cache_hits_total). */
async function localCacheHits(svc: EnvoyService): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${svc.sluice.http}/metrics`)).text();
  const line = /^sluice_local_cache_hits_total\{[^}]*\} (\d+)$/m.exec(text);
  assert.ok(line, 'sluice_local_cache_hits_total is exported');
  return Number(line[1]);
}

/** envoy's per-rule counters, from sluice_decisions_total: total_hits, over_limit, near_limit. */
async function ruleCounts(svc: EnvoyService, rule: string): Promise<{ total: number; over: number; near: number }> {
  const text = await (await fetch(`http://127.0.0.1:${svc.sluice.http}/metrics`)).text();
  const count = (outcome: string) => {
    const series = `sluice_decisions_total{domain="another",rule="${rule}",outcome="${outcome}"} `;
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? 0 : Number(line.slice(series.length));
  };
  const [ok, near, over] = [count('ok'), count('near_limit'), count('over_limit')];
  return { total: ok + near + over, over, near };
}

/** What `counts` grew by since `before`. */
const grown = (
  before: { total: number; over: number; near: number },
  after: { total: number; over: number; near: number },
) => ({ total: after.total - before.total, over: after.over - before.over, near: after.near - before.near });

for (const layout of LAYOUTS) {
  describe(`envoy ratelimit Redis cases: ${layout.name}`, () => {
    let backing: Backing;
    let runtime: Runtime;
    before(async () => {
      runtime = createRuntime({}, [join(FIXTURES, 'runtime')]);
      backing = await layout.start();
    });
    after(async () => {
      await backing?.stop();
      runtime?.dispose();
    });

    describe('over gRPC', () => {
      let svc: EnvoyService;
      before(async () => {
        svc = await startEnvoy({ ...runtime.env, ...backing.env, USE_STATSD: 'false' }, []);
      });
      after(async () => {
        assert.equal(await svc?.stop(), 0);
      });

      it('starts without warnings about the Redis settings', () => {
        const warnings = svc.sluice.stdout.filter(
          (line) => line.includes('"envoy":true') && /REDIS|LOCAL_CACHE/.test(line),
        );
        assert.deepEqual(warnings, []);
      });

      it('an unknown domain answers OK with no limit; nothing from the local cache', async () => {
        assert.deepEqual(shape(await svc.ask('foo', [[['hello', 'world']]])), {
          overallCode: 'OK',
          statuses: [NO_LIMIT],
        });
        assert.equal(await localCacheHits(svc), 0);
      });

      it('key1: 50 per second, decided by the per-second Redis when there is one', async () => {
        const [main, perSecond] = [await backing.main.scriptCalls(), await backing.perSecond.scriptCalls()];
        assert.deepEqual(shape(await svc.ask('basic', [[['key1', unique('foo')]]])), {
          overallCode: 'OK',
          statuses: [status('OK', 50, 'SECOND', 49)],
        });
        // (A 1-second counter may already be gone: the script calls say which Redis decided.)
        assert.equal((await backing.perSecond.scriptCalls()) - perSecond, 1);
        if (layout.perSecond) assert.equal((await backing.main.scriptCalls()) - main, 0);
        assert.equal(await localCacheHits(svc), 0);
      });

      it('25 requests against 20 per minute: OK down to 0, then OVER_LIMIT (the local cache answers 4)', async () => {
        await withinOneWindow(async (key) => {
          const before = await localCacheHits(svc);
          const counts = await ruleCounts(svc, 'another|key2');
          const resets = await overMinuteLimit(svc, key);
          // envoy's total_hits, over_limit and near_limit (hits past 80% of the limit) of key2.
          assert.deepEqual(grown(counts, await ruleCounts(svc, 'another|key2')), { total: 25, over: 5, near: 4 });
          // envoy: the first rejection comes from Redis, the next four from the local cache.
          assert.equal((await localCacheHits(svc)) - before, layout.localCache ? 4 : 0);
          return resets;
        });
      });

      it('two descriptors (20/minute and 10/hour): nothing is counted for a rejected request', async () => {
        await withinOneWindow(async (key) => {
          const before = await localCacheHits(svc);
          const counts = [await ruleCounts(svc, 'another|key2'), await ruleCounts(svc, 'another|key3')] as const;
          const resets = await overHourLimitOfTwo(svc, key);
          // envoy: key2 counts every hit and is never over; key3 is over on the last five.
          assert.equal(grown(counts[0], await ruleCounts(svc, 'another|key2')).total, 15);
          assert.equal(grown(counts[0], await ruleCounts(svc, 'another|key2')).over, 0);
          assert.deepEqual(grown(counts[1], await ruleCounts(svc, 'another|key3')), { total: 15, over: 5, near: 2 });
          // envoy: key3 is found in the local cache on each of the last four requests.
          assert.equal((await localCacheHits(svc)) - before, layout.localCache ? 4 : 0);
          return resets;
        });
      });

      it('duration_until_reset counts down between two requests; keys carry CACHE_KEY_PREFIX', async () => {
        const key = unique('dur');
        const first = resetMs(await svc.ask('another', [[['key4', key]]]));
        const second = resetMs(await svc.ask('another', [[['key4', key]]]));
        assert.ok(first > 0 && first <= 86_400_000);
        assert.ok(second <= first);
        const keys = await backing.main.keys(`*${key}*`);
        assert.equal(keys.length, 1, 'a per-day limit is counted in the main Redis');
        assert.ok(keys[0]?.startsWith(layout.prefix ?? 'sluice:'), keys[0]);
      });
    });
  });
}
