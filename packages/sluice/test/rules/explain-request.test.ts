/**
 * explainRequest agrees with the next check: on generated requests over nested, wildcard, unlimited, shadow, replaces
 * and quota rules, on the memory store and on Redis, the explanation's codes are what the engine then answers, and
 * explaining consumes nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createManualClock } from '../../src/core/clock.js';
import { createRulesEngine, explainRequest, type RateLimitRequest } from '../../src/rules/index.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import type { Store } from '../../src/stores/store.js';
import { rules, T0 } from './helpers.js';

const RULES = `
domain: api
descriptors:
  - key: user
    rate_limit: { name: per-user, unit: minute, requests_per_unit: 3 }
  - key: tenant
    descriptors:
      - key: path
        value: /files/*
        share_threshold: true
        rate_limit: { unit: minute, requests_per_unit: 2 }
      - key: path
        value: /admin
        rate_limit: { unlimited: true }
      - key: path
        rate_limits:
          - { name: tenant-path-second, period: 1s, requests_per_unit: 2, algorithm: gcra }
          - { name: tenant-path-minute, unit: minute, requests_per_unit: 4, algorithm: sliding-window }
  - key: vip
    rate_limit: { unit: minute, requests_per_unit: 10, replaces: [{ name: per-user }] }
  - key: trial
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
`;

type Entries = { key: string; value: string }[];

const descriptorArb: fc.Arbitrary<Entries> = fc.oneof(
  fc.constantFrom('u1', 'u2').map((v) => [{ key: 'user', value: v }]),
  fc.tuple(fc.constantFrom('t1', 't2'), fc.constantFrom('/files/a', '/files/b', '/admin', '/x', '/y')).map(([t, p]) => [
    { key: 'tenant', value: t },
    { key: 'path', value: p },
  ]),
  fc.constant<Entries>([{ key: 'vip', value: 'yes' }]),
  fc.constant<Entries>([{ key: 'trial', value: 'x' }]),
  fc.constant<Entries>([{ key: 'nobody', value: 'x' }]),
  fc.constant<Entries>([
    { key: 'user', value: 'u1' },
    { key: 'deeper', value: 'x' },
  ]),
);

const stepArb = fc.record({
  descriptors: fc.array(descriptorArb, { minLength: 1, maxLength: 3 }),
  advanceMs: fc.constantFrom(0, 0, 0, 400, 20_000),
});

/** Runs generated traces: before each check, explain it; the check must answer what explain said. */
async function agreeOn(makeStore: () => Store, flush: () => Promise<void>, quota: boolean): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 25 }), async (steps) => {
      await flush();
      const clock = createManualClock(T0);
      const store = makeStore();
      const ruleSet = rules(RULES);
      const options = { ruleSet, store, clock, quota };
      const engine = createRulesEngine(options);
      for (const step of steps) {
        clock.advance(step.advanceMs);
        const request: RateLimitRequest = {
          domain: 'api',
          descriptors: step.descriptors.map((entries) => ({ entries })),
        };
        const first = await explainRequest(options, request);
        const again = await explainRequest(options, request);
        assert.deepEqual(
          again.descriptors.map((d) => d.status.limitRemaining),
          first.descriptors.map((d) => d.status.limitRemaining),
          'explaining consumed',
        );
        const answer = await engine.shouldRateLimit(request);
        assert.equal(first.overallCode, answer.overallCode);
        assert.deepEqual(
          first.descriptors.map((d) => d.status.code),
          answer.statuses.map((s) => s.code),
        );
        // A look reports the counter as it stands; the check then takes its cost from it.
        for (const [i, d] of first.descriptors.entries()) {
          const after = answer.statuses[i]?.limitRemaining ?? 0;
          assert.ok(after <= d.status.limitRemaining, `descriptor ${i}: ${after} > ${d.status.limitRemaining}`);
        }
      }
    }),
    { numRuns: 40, seed: 41, verbose: true },
  );
}

describe('explainRequest', () => {
  it('agrees with the next check on the memory store', async () => {
    await agreeOn(
      () => createMemoryStore({ sweepIntervalMs: 0 }),
      async () => {},
      false,
    );
  });

  it('agrees with the next check in global quota mode', async () => {
    await agreeOn(
      () => createMemoryStore({ sweepIntervalMs: 0 }),
      async () => {},
      true,
    );
  });

  it('says how each descriptor met the rules', async () => {
    const store = createMemoryStore({ sweepIntervalMs: 0 });
    const options = { ruleSet: rules(RULES), store, clock: createManualClock(T0) };
    const why = await explainRequest(options, {
      domain: 'api',
      descriptors: [
        {
          entries: [
            { key: 'tenant', value: 't1' },
            { key: 'path', value: '/files/a' },
          ],
        },
        {
          entries: [
            { key: 'tenant', value: 't1' },
            { key: 'path', value: '/admin' },
          ],
        },
        { entries: [{ key: 'user', value: 'u1' }] },
        { entries: [{ key: 'vip', value: 'y' }] },
        {
          entries: [
            { key: 'user', value: 'u1' },
            { key: 'deeper', value: 'x' },
          ],
        },
        { entries: [{ key: 'trial', value: 'x' }] },
      ],
    });
    const [files, admin, user, vip, deeper, trial] = why.descriptors;
    assert.deepEqual(
      files?.steps.map((s) => s.matchedBy),
      ['key', 'wildcard'],
    );
    assert.equal(files?.key, 'tenant=t1/path=%2Ffiles%2F*');
    assert.equal(admin?.outcome, 'unlimited');
    assert.deepEqual(
      admin?.steps.map((s) => s.matchedBy),
      ['key', 'exact'],
    );
    assert.equal(user?.outcome, 'replaced');
    assert.deepEqual(user?.replaced, ['per-user']);
    assert.equal(vip?.outcome, 'limited');
    assert.equal(deeper?.outcome, 'no-rule');
    assert.match(deeper?.why ?? '', /no nested descriptors/);
    assert.equal(trial?.shadow, true);
    assert.equal(why.overallCode, 'OK');
    assert.equal(why.domainKnown, true);
    const other = await explainRequest(options, {
      domain: 'nope',
      descriptors: [{ entries: [{ key: 'a', value: 'b' }] }],
    });
    assert.equal(other.domainKnown, false);
    assert.equal(other.descriptors[0]?.outcome, 'no-rule');
  });

  it('names the binding limit and a degraded store', async () => {
    const clock = createManualClock(T0);
    const store = createMemoryStore({ sweepIntervalMs: 0 });
    const options = { ruleSet: rules(RULES), store, clock };
    const engine = createRulesEngine(options);
    const request: RateLimitRequest = {
      domain: 'api',
      descriptors: [
        {
          entries: [
            { key: 'tenant', value: 't' },
            { key: 'path', value: '/x' },
          ],
        },
      ],
    };
    await engine.shouldRateLimit(request);
    await engine.shouldRateLimit(request);
    const why = await explainRequest(options, request);
    assert.equal(why.overallCode, 'OVER_LIMIT');
    const limits = why.descriptors[0]?.limits ?? [];
    assert.deepEqual(
      limits.map((l) => [l.name, l.allowed, l.binding]),
      [
        ['tenant-path-second', false, true],
        ['tenant-path-minute', true, false],
      ],
    );
    const broken: Store = {
      ...store,
      checkMany: () => Promise.reject(Object.assign(new Error('down'), { code: 'ERR_SLUICE_STORE_UNAVAILABLE' })),
    };
    const open = await explainRequest({ ...options, store: broken, fail: 'open' }, request);
    assert.equal(open.degraded, true);
    assert.equal(open.overallCode, 'OK');
  });
});

describe('explainRequest on Redis', () => {
  let server: RedisServerHandle;
  let client: Redis;

  before(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1');
  });

  after(async () => {
    client?.disconnect();
    await server?.stop();
  });

  it('agrees with the next check on Redis', async () => {
    await agreeOn(
      () => createRedisStore({ client, clock: 'client', timeoutMs: 2000 }),
      async () => {
        await client.flushall();
      },
      false,
    );
  });
});
