/**
 * Differential property test: random traces of checks, peeks, multi-limit checks, refunds (of units taken now or
 * up to a few windows ago), resets and
 * time advances give identical decisions on the memory store and on the Redis store (client clock,
 * local cache on), for every algorithm. fast-check prints the seed and the shrunk trace on failure.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GlideClient, Logger } from '@valkey/valkey-glide';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { Redis as Valkey } from 'iovalkey';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import type { Decision } from '../../src/core/decision.js';
import { ALGORITHMS, type AlgorithmName, isBucketAlgorithm, resolvePolicy } from '../../src/core/policy.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore, type RedisStore } from '../../src/stores/redis/index.js';
import { keysWithoutTtl } from './ttl-check.js';

const T0 = 1_700_000_040_000;
const NUM_RUNS = Number(process.env.SLUICE_PROPERTY_RUNS ?? 100);

type Op =
  | { kind: 'check' | 'peek'; key: number; cost: number }
  /** `agoPermille`: the units were taken this many ‰ of the period before the refund (undefined: now). */
  | { kind: 'refund'; key: number; cost: number; agoPermille: number | undefined }
  | { kind: 'many'; key: number; cost: number }
  | { kind: 'reset'; key: number }
  | { kind: 'advance'; permille: number };

const keyArb = fc.integer({ min: 0, max: 2 });
const costArb = fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 5 }));
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('check' as const), key: keyArb, cost: costArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('peek' as const), key: keyArb, cost: costArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('many' as const), key: keyArb, cost: costArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('refund' as const),
      key: keyArb,
      cost: costArb,
      agoPermille: fc.option(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2500 })), { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const), key: keyArb }) },
  // Time moves by a fraction of the period (in ‰), often by nothing or a little, sometimes by a lot.
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      permille: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 }), fc.integer({ min: 0, max: 2500 })),
    }),
  },
);

const policyArb = (algorithm: AlgorithmName) =>
  fc.record({
    limit: fc.integer({ min: 0, max: 6 }),
    period: fc.constantFrom(7, 100, 1000, 3600, 60_000),
    burst: isBucketAlgorithm(algorithm)
      ? fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined })
      : fc.constant(undefined),
    blockDuration: fc.oneof(fc.constant(0), fc.constant(0), fc.constantFrom(250, 2000)),
    start: fc.integer({ min: 0, max: 59_999 }),
  });

/** The clients the store is claimed to work with (ioredis's Cluster and node-redis: conformance.test.ts). */
const CLIENTS = {
  ioredis: async (port: number) => {
    const client = new Redis(port, '127.0.0.1');
    return { client, close: async () => client.disconnect() };
  },
  iovalkey: async (port: number) => {
    const client = new Valkey(port, '127.0.0.1');
    return { client, close: async () => client.disconnect() };
  },
  'valkey-glide': async (port: number) => {
    Logger.setLoggerConfig('off');
    const client = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port }] });
    return { client, close: async () => client.close() };
  },
};

for (const [name, connect] of Object.entries(CLIENTS)) {
  describe(`differential: memory store vs Redis store (${name})`, () => {
    let server: RedisServerHandle;
    /** An ioredis connection of the test's own, to look at keys whatever the client under test. */
    let admin: Redis;
    let closeClient: () => Promise<void>;
    let redis: RedisStore;
    let run = 0;

    before(async () => {
      server = await startRedis();
      admin = new Redis(server.port, '127.0.0.1');
      const { client, close } = await connect(server.port);
      closeClient = close;
      redis = createRedisStore({ client, clock: 'client', timeoutMs: 5000 });
      await redis.ready();
    });
    after(async () => {
      if (admin) assert.deepEqual((await keysWithoutTtl(admin)).missing, [], 'keys without a TTL');
      await redis?.close();
      await closeClient?.();
      admin?.disconnect();
      await server?.stop();
    });

    for (const algorithm of ALGORITHMS) {
      it(`${algorithm}: identical decisions on random traces`, async () => {
        await fc.assert(
          fc.asyncProperty(
            policyArb(algorithm),
            fc.array(opArb, { minLength: 1, maxLength: 40 }),
            async (opts, ops) => {
              const { start, burst, ...rest } = opts;
              const policy = resolvePolicy({ algorithm, ...rest, ...(burst === undefined ? {} : { burst }) });
              // A second policy of the same algorithm for multi-limit checks.
              const other = resolvePolicy({ algorithm, limit: rest.limit + 2, period: rest.period * 2 });
              const memory = createMemoryStore({ sweepIntervalMs: 0 });
              const keys = [0, 1, 2].map((k) => `run${++run}:${k}:{x}`);
              let now = T0 + start;
              for (const [step, op] of ops.entries()) {
                const where = `step ${step} ${JSON.stringify(op)} at +${now - T0 - start}`;
                if (op.kind === 'advance') {
                  now += Math.floor((op.permille * policy.periodMs) / 1000);
                  continue;
                }
                const key = keys[op.key] as string;
                const mate = keys[(op.key + 1) % 3] as string;
                if (op.kind === 'reset') {
                  memory.reset(key, policy);
                  await redis.reset(key, policy);
                } else if (op.kind === 'refund') {
                  const takenAt =
                    op.agoPermille === undefined
                      ? undefined
                      : now - Math.floor((op.agoPermille * policy.periodMs) / 1000);
                  memory.refund(key, policy, op.cost, now, takenAt);
                  await redis.refund(key, policy, op.cost, now, takenAt);
                } else if (op.kind === 'many') {
                  const items = [
                    { key, policy, cost: op.cost },
                    { key: mate, policy: other, cost: op.cost },
                    { key, policy: other, cost: 1 },
                  ];
                  same(await redis.checkMany(items, now, true), memory.checkMany(items, now, true), where);
                } else {
                  const commit = op.kind === 'check';
                  same(
                    await redis.check(key, policy, op.cost, now, commit),
                    memory.check(key, policy, op.cost, now, commit),
                    where,
                  );
                }
              }
              await memory.close();
            },
          ),
          { numRuns: NUM_RUNS },
        );
      });
    }
  });
}

function same(got: Decision | Decision[], want: Decision | Decision[], where: string): void {
  assert.deepEqual(got, want, where);
}
