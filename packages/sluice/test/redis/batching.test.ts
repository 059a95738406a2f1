/**
 * How the Redis store groups single checks into script calls, counted with stats().commands against a
 * real Redis: a lone check goes out at once; checks that arrive while one is in flight share one call.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createRedisStore } from '../../src/stores/redis/index.js';

describe('Redis store batching', () => {
  const redis = useRedis();
  const policy = resolvePolicy({ limit: 100, period: '1m' });

  it('sends a lone check at once, and batches the checks that arrive while it is in flight', async () => {
    const store = createRedisStore({ client: redis.client, prefix: 'batching-1:', timeoutMs: 2000 });
    // Ready first: until then checks wait for the connection and the scripts, whatever their number.
    await store.ready();
    // Script calls sent since, not counting the ones sent again in full after NOSCRIPT (a fresh Redis).
    const base = store.stats().commands - store.stats().scriptLoads;
    const sent = () => store.stats().commands - store.stats().scriptLoads - base;
    const first = store.check('a', policy, 1, 0, true);
    assert.equal(sent(), 1, 'the first check did not wait for the next loop phase');
    const rest = Array.from({ length: 10 }, (_, i) => store.check(`k${i}`, policy, 1, 0, true));
    assert.equal(sent(), 1, 'the others are queued');
    const decisions = await Promise.all([first, ...rest]);
    assert.ok(decisions.every((d) => d.allowed && d.remaining === 99));
    assert.equal(sent(), 2, 'the ten queued checks went out as one script call');
    // Once nothing is in flight, a check goes out at once again.
    const again = store.check('a', policy, 1, 0, true);
    assert.equal(sent(), 3);
    assert.equal((await again).remaining, 98);
    await store.close();
  });

  it('decides a batch of mixed items — peeks, costs above one, three policies — as separate calls would', async () => {
    // A batch item is one argument: '1' for the usual one (commit, cost 1, first policy), else
    // 'commit:cost:index' (script-args.ts), and its block key goes only when its policy blocks. Every
    // other form is here — a blocking policy between two that do not, a bucket among windows — against
    // the same checks sent one call each.
    const a = resolvePolicy({ limit: 5, period: '1m' });
    const b = resolvePolicy({ limit: 3, period: '1m' });
    const c = resolvePolicy({ limit: 2, period: '1m', blockDuration: '10s' });
    const d = resolvePolicy({ algorithm: 'gcra', limit: 2, period: '1m' });
    const checks: [string, typeof a, number, boolean][] = [
      ['k1', a, 1, true],
      ['k1', b, 2, true],
      ['k1', a, 1, false],
      ['k2', b, 4, true],
      ['k1', a, 3, true],
      ['k1', b, 1, true],
      ['k1', a, 2, false],
      ['k1', b, 1, false],
      ['k1', a, 1, true],
      ['k3', c, 1, true],
      ['k1', b, 1, true],
      ['k3', c, 1, true],
      ['k4', d, 1, true],
      ['k3', c, 1, true],
      ['k3', c, 1, false],
      ['k4', d, 2, true],
      ['k1', a, 1, true],
    ];
    const run = async (batch: boolean) => {
      const store = createRedisStore({
        client: redis.client,
        prefix: `batching-3${batch}:`,
        timeoutMs: 2000,
        batch,
        clock: 'client',
      });
      await store.ready();
      const base = store.stats().commands - store.stats().scriptLoads;
      const busy = store.check('busy', a, 1, 0, true); // in flight: the checks below queue behind it
      const decisions = await Promise.all(checks.map(([k, p, cost, commit]) => store.check(k, p, cost, 0, commit)));
      await busy;
      const calls = store.stats().commands - store.stats().scriptLoads - base;
      await store.close();
      return { decisions, calls };
    };
    const batched = await run(true);
    const single = await run(false);
    assert.equal(batched.calls, 3, 'one call for the busy check, one for each script (the windows, GCRA)');
    assert.equal(single.calls, checks.length + 1);
    assert.deepEqual(batched.decisions, single.decisions);
    // The story did exercise what it means to: a peek that takes nothing, a cost over the capacity.
    assert.equal(batched.decisions[2]?.remaining, 4);
    assert.equal(batched.decisions[3]?.allowed, false);
    assert.deepEqual(
      [batched.decisions[8]?.allowed, batched.decisions[8]?.remaining],
      [true, 0],
      'k1 under a: 1 + 3 + 1',
    );
    assert.deepEqual(
      batched.decisions.slice(9).map((x) => [x.allowed, x.reason]),
      [
        [true, undefined],
        [false, undefined],
        [true, undefined],
        [true, undefined],
        [false, undefined],
        [false, 'blocked'],
        [false, undefined],
        [false, undefined],
      ],
      'k3 under c: two pass, the third is over and blocks, the peek finds the block; k4 under d: 1, then 2 over',
    );
  });

  it('with batch: false, sends every check on its own', async () => {
    const store = createRedisStore({ client: redis.client, prefix: 'batching-2:', timeoutMs: 2000, batch: false });
    await store.ready();
    const base = store.stats().commands - store.stats().scriptLoads;
    await Promise.all(Array.from({ length: 5 }, (_, i) => store.check(`k${i}`, policy, 1, 0, true)));
    assert.equal(store.stats().commands - store.stats().scriptLoads - base, 5);
    await store.close();
  });
});
