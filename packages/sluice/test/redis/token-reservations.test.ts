/**
 * The token limiter's reservations (sluice/llm, issue 40): memory ≡ Redis on random, seeded traces of
 * reserve, settle (under, over, hostile usage), cancel, sweep and the clock moving past the
 * reservation TTL — every decision per dimension (requests, tokens, cost) and every settle answer alike.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { createManualClock } from '../../src/core/clock.js';
import { createTokenLimiter, type TokenLimiter } from '../../src/llm/create-token-limiter.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import type { Store } from '../../src/stores/store.js';

const T0 = 1_700_000_000_000;
const redis = useRedis();
let prefix = 0;

type Op =
  | { kind: 'reserve'; key: number; input: number; max: number }
  | { kind: 'settle'; pick: number; input: number; output: number }
  | { kind: 'cancel'; pick: number }
  | { kind: 'hostile'; pick: number; usage: unknown }
  | { kind: 'advance'; ms: number }
  | { kind: 'sweep' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('reserve' as const),
    key: fc.integer({ min: 0, max: 1 }),
    input: fc.integer({ min: 0, max: 60 }),
    max: fc.integer({ min: 0, max: 80 }),
  }),
  fc.record({
    kind: fc.constant('settle' as const),
    pick: fc.nat(20),
    input: fc.integer({ min: 0, max: 80 }),
    output: fc.integer({ min: 0, max: 120 }),
  }),
  fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat(20) }),
  fc.record({
    kind: fc.constant('hostile' as const),
    pick: fc.nat(20),
    usage: fc.constantFrom(
      { inputTokens: -1, outputTokens: 1 },
      { inputTokens: Number.NaN, outputTokens: 1 },
      { inputTokens: 1e12, outputTokens: 1 },
      { inputTokens: 1.5, outputTokens: 0 },
      null,
    ),
  }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 1500 }) }),
  fc.constant({ kind: 'sweep' as const }),
);

function side(store: Store, onExpire: 'charge' | 'refund') {
  const clock = createManualClock(T0);
  const limiter = createTokenLimiter({
    requests: { limit: 6, period: '10s', algorithm: 'sliding-window' },
    inputTokens: { limit: 200, period: '10s', algorithm: 'fixed-window' },
    totalTokens: { limit: 300, period: '10s', algorithm: 'token-bucket' },
    cost: { limit: 900, period: '1m', price: { inputTokens: 1, outputTokens: 3 } },
    store,
    clock,
    reservationTtl: 1000,
    onExpire,
  });
  return { clock, limiter, ids: [] as string[] };
}

const results = (d: { allowed: boolean; results?: { name: string; decision: { remaining: number } }[] }) => [
  d.allowed,
  ...(d.results ?? []).map((r) => `${r.name}=${r.decision.remaining}`),
];

async function step(s: { clock: ReturnType<typeof createManualClock>; limiter: TokenLimiter; ids: string[] }, op: Op) {
  const pick = (n: number) => (s.ids.length === 0 ? 'none' : (s.ids[n % s.ids.length] as string));
  switch (op.kind) {
    case 'advance':
      s.clock.advance(op.ms);
      return s.limiter.outstanding;
    case 'sweep':
      return s.limiter.sweep();
    case 'reserve': {
      const r = await s.limiter.reserve(`k${op.key}`, { inputTokens: op.input, maxOutputTokens: op.max });
      s.ids.push(r.allowed ? r.id : '');
      return results(r.decision);
    }
    default: {
      const id = pick(op.pick);
      const a =
        op.kind === 'cancel'
          ? await s.limiter.cancel(id)
          : await s.limiter.settle(
              id,
              (op.kind === 'settle' ? { inputTokens: op.input, outputTokens: op.output } : op.usage) as never,
            );
      return a.ok ? [a.charged, a.refunded, a.extra?.allowed] : a.code;
    }
  }
}

describe('token reservations: memory ≡ Redis on random traces', () => {
  it('gives the same decisions per dimension and the same settle answers', async () => {
    const seed = Date.now();
    console.log(`fast-check seed ${seed}`);
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { maxLength: 30 }),
        fc.constantFrom('charge' as const, 'refund' as const),
        async (ops, onExpire) => {
          const memory = side(createMemoryStore(), onExpire);
          const onRedis = side(
            createRedisStore({ client: redis.client, clock: 'client', timeoutMs: 5000, prefix: `tokdiff${++prefix}:` }),
            onExpire,
          );
          for (const op of ops) {
            const [a, b] = [await step(memory, op), await step(onRedis, op)];
            assert.deepEqual(b, a, JSON.stringify(op));
          }
        },
      ),
      { seed, numRuns: 40 },
    );
  });
});
