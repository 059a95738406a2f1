/**
 * Exact from the first request, through the service: two `sluice serve --redis` processes started
 * together (default options: no --redis-timeout) and loaded the moment they listen — 150 concurrent
 * /v1/check calls each on one key, limit 100, token bucket — admit exactly 100, and none is answered
 * without Redis (the service's default is fail-closed: a store failure would be an error result).
 */
import assert from 'node:assert/strict';
import os from 'node:os';
import { after, before, describe, it } from 'node:test';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { postJson, type SluiceProcess, startSluice, unique } from './helpers.js';

describe('two services started together on one Redis, loaded as soon as they listen', () => {
  let redis: RedisServerHandle;
  const services: SluiceProcess[] = [];

  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await redis?.stop();
  });

  it('admit exactly the limit, every decision taken by Redis', async (t) => {
    const key = unique('cold');
    const check = { key, limit: 100, period: '1h', algorithm: 'token-bucket' };
    const loads = await Promise.all(
      [0, 1].map(async () => {
        const service = await startSluice(['--redis', redis.url]);
        services.push(service);
        // No health check, no warm-up: the first requests arrive as the ports open.
        return Promise.all(
          Array.from({ length: 150 }, () =>
            postJson(`http://127.0.0.1:${service.http}/v1/check`, { checks: [check] }).then(
              (r) => (r.json.results as { allowed?: boolean; error?: { code: string } }[])[0],
            ),
          ),
        );
      }),
    );
    const results = loads.flat();
    const failed = results.filter((r) => r?.error !== undefined);
    // The default Redis timeout is 50 ms: a pause of a service or of Redis on a busy machine can exceed it
    // (the 1-minute load average lags too much to tell), and fail-closed answers it with an error, never
    // an admission. So: no failure but a timeout, never more than the limit admitted, and nothing short
    // of it but what timed out (a timed-out check may still have counted in Redis).
    const codes = new Set(failed.map((r) => r?.error?.code));
    assert.ok(
      failed.length === 0 || (codes.size === 1 && codes.has('ERR_SLUICE_STORE_TIMEOUT')),
      JSON.stringify([...codes]),
    );
    if (failed.length > 0) {
      t.diagnostic(`${failed.length} timeouts: load average ${os.loadavg()[0]} on ${os.cpus().length} cores`);
    }
    const admitted = results.filter((r) => r?.allowed === true).length;
    assert.ok(admitted <= 100 && admitted >= 100 - failed.length, `admitted ${admitted}, ${failed.length} timed out`);
  });
});
