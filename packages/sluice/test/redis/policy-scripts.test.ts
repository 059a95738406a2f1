/**
 * A policy's own script (the policy written into the Lua: policy-scripts.ts): loaded on the policy's
 * first check, then used for every batch whose first item has that policy — alone, and batched with
 * items of other policies, which travel as arguments. At most MAX_POLICY_SCRIPTS per store.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { type ResolvedPolicy, resolvePolicy } from '../../src/core/policy.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import { MAX_POLICY_SCRIPTS } from '../../src/stores/redis/policy-scripts.js';
import { scriptCall } from '../../src/stores/redis/script-args.js';
import { ALL_SCRIPTS, policyScript } from '../../src/stores/redis/scripts.js';

describe("a policy's own script", () => {
  const redis = useRedis();

  async function cachedScripts(): Promise<number> {
    return Number(/number_of_cached_scripts:(\d+)/.exec(await redis.client.info('memory'))?.[1]);
  }

  async function loaded(policies: readonly ResolvedPolicy[]): Promise<number[]> {
    return (await redis.client.script('EXISTS', ...policies.map((p) => policyScript(p).sha))) as number[];
  }

  for (const algorithm of ['fixed-window', 'token-bucket', 'gcra'] as const) {
    it(`${algorithm}: decides batches led by either policy exactly, the other policy as arguments`, async () => {
      const store = createRedisStore({ client: redis.client, prefix: `own-${algorithm}:`, timeoutMs: 2000 });
      const three = resolvePolicy({ algorithm, limit: 3, period: 3_600_000 });
      const five = resolvePolicy({ algorithm, limit: 5, period: 3_600_000 });
      // The first check of each policy starts its script's load (and is decided by the algorithm's).
      assert.equal((await store.check('warm', three, 1, 0, true)).remaining, 2);
      assert.equal((await store.check('warm', five, 1, 0, true)).remaining, 4);
      assert.deepEqual(await loaded([three, five]), [1, 1]);
      // Checks sent together: the first goes alone, the other three as one batch led by the second's
      // policy. Each answer as [allowed, remaining].
      const together = async (...calls: [string, ResolvedPolicy, number][]) =>
        (await Promise.all(calls.map(([key, p, cost]) => store.check(key, p, cost, 0, true)))).map((d) => [
          d.allowed,
          d.remaining,
        ]);
      const ledByThree = await together(['a', three, 1], ['b', three, 2], ['c', five, 4], ['b', three, 2]);
      assert.deepEqual(ledByThree, [
        [true, 2],
        [true, 1],
        [true, 1],
        [false, 1],
      ]);
      const ledByFive = await together(['a', three, 1], ['c', five, 1], ['a', three, 1], ['c', five, 1]);
      assert.deepEqual(ledByFive, [
        [true, 1],
        [true, 0],
        [true, 0],
        [false, 0],
      ]);
      await store.close();
    });
  }

  it('replies with one integer per allowed decision, six per other, and nothing after them', async () => {
    const p = resolvePolicy({ algorithm: 'token-bucket', limit: 2, period: 60_000 });
    const script = policyScript(p);
    await redis.client.script('LOAD', script.source);
    const batch = async (keys: string[]) => {
      const items = keys.map((k) => ({ key: `reply:{${k}}`, bkey: '', policy: p, fields: ['1', '2'] }));
      const argv = scriptCall(script, ['', '0'], items, true, p) as [string, ...string[]];
      return (await redis.client.call(...argv)) as number[];
    };
    const allowed = await batch(['a', 'b', 'c']);
    assert.equal(allowed.length, 3);
    assert.ok(allowed.every((x) => x >= 0));
    // 'a' is full: its check is refused (six integers, the first −1 − allowed), 'd' is new.
    const mixed = await batch(['a', 'd']);
    assert.equal(mixed.length, 7);
    assert.equal(mixed[0], -1);
    assert.ok((mixed[6] as number) >= 0);
  });

  it('leaky bucket: an allowed decision is one integer that carries its delay, exactly', async () => {
    // 7 per second: a request adds 142.857… ms, so resetMs − delayMs is 142 or 143 (the packed q bit).
    const p = resolvePolicy({ algorithm: 'leaky-bucket', limit: 7, period: 1000, burst: 6 });
    const script = policyScript(p);
    await redis.client.script('LOAD', script.source);
    const lone = scriptCall(
      script,
      ['5000', '0'],
      [{ key: 'lone:{k}', bkey: '', policy: p, fields: ['1', '1'] }],
      true,
      p,
    );
    assert.equal(typeof (await redis.client.call(...(lone as [string, ...string[]]))), 'number');

    const redisStore = createRedisStore({
      client: redis.client,
      prefix: 'leaky-packed:',
      clock: 'client',
      timeoutMs: 2000,
    });
    const memory = createMemoryStore();
    const added = (cost: number, commit: boolean) => (commit && cost > 0 ? cost * p.intervalTicks : 0);
    const gaps = new Set<number>();
    // [ms, cost, commit]: queued requests, a peek, a cost of 0 and of 2, then the bucket draining.
    const trace: [number, number, boolean][] = [
      [0, 1, true],
      [1, 1, true],
      [40, 1, false],
      [41, 2, true],
      [90, 0, true],
      [200, 1, true],
      [333, 1, true],
      [334, 1, false],
      [700, 2, true],
      [701, 1, true],
      [1500, 1, true],
      [1501, 1, false],
    ];
    for (const [at, cost, commit] of trace) {
      const [fromRedis, fromMemory] = await Promise.all([
        redisStore.check('k', p, cost, at, commit),
        memory.check('k', p, cost, at, commit),
      ]);
      assert.deepEqual(fromRedis, fromMemory, `at ${at} ms, cost ${cost}, commit ${commit}`);
      if (fromRedis.allowed)
        gaps.add(fromRedis.resetMs - (fromRedis.delayMs as number) - Math.floor(added(cost, commit) / p.scale));
    }
    assert.deepEqual([...gaps].sort(), [0, 1], 'both values of q occur');
    await redisStore.close();
  });

  it('after SCRIPT FLUSH, sends the source again and decides the same', async () => {
    const store = createRedisStore({ client: redis.client, prefix: 'flush:', timeoutMs: 2000 });
    const p = resolvePolicy({ algorithm: 'sliding-window', limit: 4, period: 3_600_000 });
    await store.check('k', p, 1, 0, true);
    assert.deepEqual(await loaded([p]), [1]);
    await redis.client.script('FLUSH');
    const loadsBefore = store.stats().scriptLoads;
    const d = await store.check('k', p, 1, 0, true);
    assert.equal(d.remaining, 2);
    assert.equal(store.stats().scriptLoads, loadsBefore + 1, 'NOSCRIPT, then EVAL with the source');
    await store.close();
  });

  it(`gives at most ${MAX_POLICY_SCRIPTS} policies a script of their own; the rest decide as before`, async () => {
    await redis.client.script('FLUSH');
    const store = createRedisStore({ client: redis.client, prefix: 'cap:', timeoutMs: 2000 });
    await store.ready();
    const policies = Array.from({ length: MAX_POLICY_SCRIPTS + 16 }, (_, i) =>
      resolvePolicy({ algorithm: 'gcra', limit: 10 + i, period: 60_000 }),
    );
    for (const p of policies) await store.check('k', p, 1, 0, true);
    for (const [i, p] of policies.entries()) assert.equal((await store.check('k', p, 1, 0, true)).remaining, 8 + i);
    const own = (await loaded(policies)).filter((e) => e === 1).length;
    assert.equal(own, MAX_POLICY_SCRIPTS);
    assert.equal(await cachedScripts(), ALL_SCRIPTS.length + MAX_POLICY_SCRIPTS);
    await store.close();
  });
});
