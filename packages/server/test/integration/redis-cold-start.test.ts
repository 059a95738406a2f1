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

/** More runnable processes than twice the cores: scheduling delays alone can exceed the 50 ms timeout. */
const overloaded = () => (os.loadavg()[0] ?? 0) > 2 * os.cpus().length;

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
    if (failed.length > 0) {
      // Only a genuine timeout on an overloaded machine may explain a decision taken without Redis.
      assert.ok(overloaded(), `${failed.length} checks failed: ${JSON.stringify(failed[0])}`);
      assert.ok(failed.every((r) => r?.error?.code === 'ERR_SLUICE_STORE_TIMEOUT'));
      t.diagnostic(`${failed.length} timeouts: load average ${os.loadavg()[0]} on ${os.cpus().length} cores`);
      return;
    }
    assert.equal(results.filter((r) => r?.allowed === true).length, 100);
  });
});
