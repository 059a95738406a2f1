/**
 * Two service processes on one test Redis share their limits exactly: concurrent requests spread over
 * both, over gRPC, /json and /v1/check, admit exactly the limit. With Redis gone, the health check says
 * so (503 under the default fail-closed behaviour). One service also runs on a 3-master Redis Cluster.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type RedisServerHandle, startRedis, startRedisCluster } from '../../../../test/helpers/redis-server.js';
import { createRlsClient, type RlsClient } from '../../src/index.js';
import { postJson, type SluiceProcess, startSluice, tempFile, unique } from './helpers.js';

const RULES = `domain: shared
descriptors:
  - key: user
    rate_limit: { unit: day, requests_per_unit: 50 }
`;

describe('two services on one Redis', () => {
  let redis: RedisServerHandle;
  let config: ReturnType<typeof tempFile>;
  let a: SluiceProcess;
  let b: SluiceProcess;
  let clients: RlsClient[];

  before(async () => {
    redis = await startRedis();
    config = tempFile('shared.yaml', RULES);
    [a, b] = await Promise.all([
      // A generous timeout: this checks exactness, and CI machines can be slow.
      startSluice(['--config', config.path, '--redis', redis.url, '--redis-timeout', '2s']),
      startSluice(['--config', config.path, '--redis-timeout', '2s'], { REDIS_URL: redis.url }),
    ]);
    clients = [createRlsClient(`127.0.0.1:${a.grpc}`), createRlsClient(`127.0.0.1:${b.grpc}`)];
  });
  after(async () => {
    for (const c of clients ?? []) c.close();
    const exits = await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
    config?.remove();
    assert.deepEqual(
      exits.map((e) => e?.code),
      [0, 0],
    );
  });

  it('admit exactly the limit across both processes and every API', async () => {
    const user = unique('u');
    const body = { domain: 'shared', descriptors: [{ entries: [{ key: 'user', value: user }] }] };
    const calls: Promise<boolean>[] = [];
    for (let i = 0; i < 160; i++) {
      const process = i % 2 === 0 ? a : b;
      if (i % 4 < 2) {
        calls.push((clients[i % 2] as RlsClient).shouldRateLimit(body).then((r) => r.overallCode === 'OK'));
      } else {
        calls.push(postJson(`http://127.0.0.1:${process.http}/json`, body).then((r) => r.status === 200));
      }
    }
    const allowed = (await Promise.all(calls)).filter(Boolean).length;
    assert.equal(allowed, 50);

    const key = unique('k');
    const checks = Array.from({ length: 60 }, (_, i) =>
      postJson(`http://127.0.0.1:${(i % 2 === 0 ? a : b).http}/v1/check`, {
        checks: [{ key, limit: 25, period: '1h', algorithm: 'sliding-log' }],
      }).then((r) => (r.json.results as { allowed: boolean }[])[0]?.allowed === true),
    );
    assert.equal((await Promise.all(checks)).filter(Boolean).length, 25);
  });

  it('report the store in the health check, and 503 while Redis is unreachable', async () => {
    const ok = await fetch(`http://127.0.0.1:${a.http}/healthcheck`);
    assert.deepEqual(await ok.json(), { status: 'ok', store: 'redis', storeReachable: true });
    await redis.stop();
    const down = await fetch(`http://127.0.0.1:${b.http}/healthcheck`);
    assert.equal(down.status, 503);
    assert.deepEqual(await down.json(), { status: 'unavailable', store: 'redis', storeReachable: false });
    const refused = await postJson(`http://127.0.0.1:${a.http}/json`, {
      domain: 'shared',
      descriptors: [{ entries: [{ key: 'user', value: unique('d') }] }],
    });
    assert.equal(refused.status, 503);
  });
});

describe('a service on a Redis Cluster', () => {
  it('decides over --redis-cluster, with descriptors in different hash slots', async () => {
    const cluster = await startRedisCluster(3);
    const seeds = cluster.ports.map((p) => `127.0.0.1:${p}`).join(',');
    const service = await startSluice(['--redis-cluster', seeds, '--redis-timeout', '2s']);
    try {
      const base = `http://127.0.0.1:${service.http}`;
      const key = unique('c');
      const results: boolean[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await postJson(`${base}/v1/check`, { checks: [{ key, limit: 2, period: '1h' }] });
        results.push((res.json.results as { allowed: boolean }[])[0]?.allowed === true);
      }
      assert.deepEqual(results, [true, true, false]);
      const both = await postJson(`${base}/json`, {
        domain: 'example',
        descriptors: [
          { entries: [{ key: 'api_key', value: unique('k') }] },
          { entries: [{ key: 'remote_address', value: '192.0.2.7' }] },
        ],
      });
      assert.equal(both.status, 200);
      assert.deepEqual(
        (both.json.statuses as { currentLimit?: { name?: string } }[]).map((s) => s.currentLimit?.name),
        ['per-key-minute', 'per-ip'],
      );
      assert.equal((await fetch(`${base}/healthcheck`)).status, 200);
    } finally {
      assert.equal((await service.stop()).code, 0);
      await cluster.stop();
    }
  });
});
