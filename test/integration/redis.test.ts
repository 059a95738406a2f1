/**
 * Two service processes on one test Redis share their limits exactly: concurrent requests spread over
 * both, over gRPC, /json and /v1/check, admit exactly the limit. With Redis gone, the health check says
 * so (503 under the default fail-closed behaviour).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRlsClient, type RlsClient } from '../../src/server/index.js';
import { type RedisServerHandle, startRedis } from '../helpers/redis-server.js';
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
