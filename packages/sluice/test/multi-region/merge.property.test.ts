/**
 * The eventual-mode merge (EVENTUAL_MERGE, run in a real Redis) is a G-counter merge: whatever the
 * order, duplication and delay of sync messages — any earlier snapshot of a region's own fields may
 * arrive, any number of times, anywhere — once every region's latest fields have reached every
 * region, all regions hold the same counts, and they are exactly what each region counted.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { EVENTUAL_MERGE } from '../../src/stores/multi-region/eventual-lua.js';

const REGIONS = ['eu', 'us', 'ap'] as const;
type Region = (typeof REGIONS)[number];

/** A region counting (its own '+' and '-' fields), or a sync message of an earlier snapshot arriving. */
type Op =
  | { kind: 'count'; region: number; plus: number; minus: number }
  | { kind: 'deliver'; from: number; to: number; age: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('count' as const),
    region: fc.nat(2),
    plus: fc.integer({ min: 0, max: 5 }),
    minus: fc.integer({ min: 0, max: 2 }),
  }),
  fc.record({ kind: fc.constant('deliver' as const), from: fc.nat(2), to: fc.nat(2), age: fc.nat(10) }),
);

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

let run = 0;

it('any order, duplication and delay of sync messages converges to the same, exact counts', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(op, { maxLength: 40 }),
      fc.array(fc.nat(8), { minLength: 6, maxLength: 12 }),
      async (ops, finalOrder) => {
        run++;
        // Each region's copy of one window's counter, as that region's Redis holds it.
        const key = (r: Region) => `prop:${run}:{w}=${r}@1`;
        const marker = (r: Region) => `prop:${run}:{w}=${r}`;
        const own: Record<Region, { plus: number; minus: number }[]> = { eu: [], us: [], ap: [] };
        const snapshot = (r: Region) => own[r][own[r].length - 1] ?? { plus: 0, minus: 0 };
        const deliver = async (from: Region, to: Region, s: { plus: number; minus: number }) => {
          await client.eval(EVENTUAL_MERGE.source, 2, key(to), marker(to), from, s.plus, s.minus, 60_000, 1);
        };
        for (const o of ops) {
          if (o.kind === 'count') {
            const r = REGIONS[o.region] as Region;
            const last = snapshot(r);
            const next = { plus: last.plus + o.plus, minus: last.minus + o.minus };
            // What the check and refund scripts do: only a region adds to its own fields.
            if (o.plus > 0) await client.hincrby(key(r), `+${r}`, o.plus);
            if (o.minus > 0) await client.hincrby(key(r), `-${r}`, o.minus);
            await client.pexpire(key(r), 60_000);
            own[r].push(next);
          } else {
            const from = REGIONS[o.from] as Region;
            const to = REGIONS[o.to] as Region;
            const history = own[from];
            if (from === to || history.length === 0) continue;
            // A delayed message: any earlier snapshot, possibly one delivered before.
            await deliver(
              from,
              to,
              history[Math.max(0, history.length - 1 - o.age)] as { plus: number; minus: number },
            );
          }
        }
        // The final sync, in any order, some messages twice.
        for (const n of finalOrder) {
          const from = REGIONS[n % 3] as Region;
          for (const to of REGIONS) if (to !== from) await deliver(from, to, snapshot(from));
        }
        for (const from of REGIONS) for (const to of REGIONS) if (to !== from) await deliver(from, to, snapshot(from));
        const expected: Record<string, string> = {};
        for (const r of REGIONS) {
          const s = snapshot(r);
          if (s.plus > 0) expected[`+${r}`] = String(s.plus);
          if (s.minus > 0) expected[`-${r}`] = String(s.minus);
        }
        for (const r of REGIONS) assert.deepEqual(await client.hgetall(key(r)), expected, `region ${r}`);
      },
    ),
    { numRuns: 60, verbose: 1 },
  );
});
