/**
 * The rules engine on the Redis store (a redis-server this test starts): rule identities, large fixed
 * windows, several limits per descriptor, overrides and hot swaps behave as on the memory store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createRedisStore, type RedisStore } from '../../src/stores/redis/index.js';
import { harness, rules } from './helpers.js';

const RULES = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: tenant
    rate_limit: { unit: month, requests_per_unit: 4000000000 }
  - key: api_key
    rate_limits:
      - { name: per-second, period: 1s, requests_per_unit: 2, algorithm: gcra }
      - { name: per-minute, unit: minute, requests_per_unit: 3, algorithm: sliding-window }
  - key: file
    value: /files/*
    share_threshold: true
    rate_limit: { unit: minute, requests_per_unit: 2 }
`;

describe('rules engine on Redis', () => {
  let server: RedisServerHandle;
  let client: Redis;
  let store: RedisStore;

  before(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1');
    store = createRedisStore({ client, clock: 'client', timeoutMs: 2000 });
  });

  after(async () => {
    await store?.close();
    client?.disconnect();
    await server?.stop();
  });

  it('counts per rule and value, all or nothing across descriptors', async () => {
    const h = harness(rules(RULES), { store });
    for (const left of [2, 1, 0]) assert.equal((await h.one('api', ['user', 'u1'])).limitRemaining, left);
    const res = await h.ask('api', [['tenant', 't']], [['user', 'u1']]);
    assert.deepEqual(
      res.statuses.map((s) => s.code),
      ['OK', 'OVER_LIMIT'],
    );
    // The rejected request did not charge the tenant's monthly quota.
    assert.equal((await h.one('api', ['tenant', 't'])).limitRemaining, 3_999_999_999);
    assert.equal((await h.one('api', ['user', 'u2'])).limitRemaining, 2);
  });

  it('several limits, shared wildcard counters and overrides', async () => {
    const h = harness(rules(RULES), { store });
    const codes: string[] = [];
    for (let i = 0; i < 3; i++) codes.push((await h.one('api', ['api_key', 'k'])).code);
    h.clock.advance(1000);
    codes.push((await h.one('api', ['api_key', 'k'])).code);
    codes.push((await h.one('api', ['api_key', 'k'])).code);
    assert.deepEqual(codes, ['OK', 'OK', 'OVER_LIMIT', 'OK', 'OVER_LIMIT']);
    await h.one('api', ['file', '/files/a']);
    await h.one('api', ['file', '/files/b']);
    assert.equal((await h.one('api', ['file', '/files/c'])).code, 'OVER_LIMIT');
    const override = await h.engine.shouldRateLimit({
      domain: 'api',
      descriptors: [{ entries: [{ key: 'anything', value: 'x' }], limit: { requestsPerUnit: 1, unit: 'HOUR' } }],
    });
    assert.equal(override.statuses[0]?.limitRemaining, 0);
  });

  it('a hot swap keeps the counters in Redis', async () => {
    const h = harness(rules(RULES), { store });
    await h.one('api', ['user', 'swap']);
    h.engine.setRuleSet(
      rules(RULES.replace('unit: minute, requests_per_unit: 3 }', 'unit: minute, requests_per_unit: 5 }')),
    );
    const s = await h.one('api', ['user', 'swap']);
    assert.deepEqual([s.currentLimit?.requestsPerUnit, s.limitRemaining], [5, 3]);
    await h.engine.reset({ domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'swap' }] }] });
    assert.equal((await h.one('api', ['user', 'swap'])).limitRemaining, 4);
  });
});
