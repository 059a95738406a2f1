/**
 * Faults: the test's Redis killed under load and restarted empty, SCRIPT FLUSH mid-run, and a server
 * that accepts connections but never answers. Decisions must follow each limiter's failure policy
 * within the command timeout, recover without a restart, and leave no unhandled rejection or listener.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { isSluiceError, type SluiceError } from '../../src/core/errors.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createLimiter, type LimiterDecision } from '../../src/limiter/create-limiter.js';
import { createRedisStore } from '../../src/stores/redis/index.js';

const TIMEOUT_MS = 50;
/**
 * Scheduling slack on a loaded 2-core CI machine; the store itself gives up after TIMEOUT_MS. The outage
 * lasts longer than the two together, so a decision that waited for Redis to come back still fails the bound.
 */
const SLACK_MS = 700;
const OUTAGE_MS = 1500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let unhandled = 0;
const onUnhandled = () => {
  unhandled++;
};

before(() => {
  process.on('unhandledRejection', onUnhandled);
});
after(() => {
  process.off('unhandledRejection', onUnhandled);
  assert.equal(unhandled, 0, 'no unhandled rejection');
});

function listenerCounts(emitter: Redis): Record<string, number> {
  return Object.fromEntries(emitter.eventNames().map((e) => [String(e), emitter.listenerCount(e)]));
}

describe('faults: Redis killed under load, then restarted empty', () => {
  let server: RedisServerHandle;
  let client: Redis;

  before(async () => {
    server = await startRedis();
    // A short reconnect delay (ioredis' default backs off to 2 s) and no retry of in-flight commands.
    client = new Redis(server.port, '127.0.0.1', { retryStrategy: () => 50, maxRetriesPerRequest: 0 });
    client.on('error', () => {}); // the store reports through onError; ioredis logs unhandled 'error's
    await new Promise((r) => client.once('ready', r));
  });
  after(async () => {
    client?.disconnect();
    await server?.stop();
  });

  it('follows each failure policy within the timeout, and is correct again within a second', async () => {
    const errors: SluiceError[] = [];
    const store = createRedisStore({ client, timeoutMs: TIMEOUT_MS, onError: (e) => errors.push(e) });
    const policy = { limit: 1000, period: '1m' } as const;
    const limiters = {
      open: createLimiter({ ...policy, store, fail: 'open', name: 'open' }),
      closed: createLimiter({ ...policy, store, fail: 'closed', name: 'closed' }),
      insurance: createLimiter({ ...policy, store, fail: 'insurance', insuranceShare: 0.002, name: 'ins' }),
    };
    const listenersBefore = listenerCounts(client);
    const log: { mode: keyof typeof limiters; start: number; end: number; d: LimiterDecision }[] = [];
    let running = true;
    const worker = async (w: number) => {
      const modes = Object.keys(limiters) as (keyof typeof limiters)[];
      for (let i = 0; running; i++) {
        const mode = modes[(w + i) % 3] as keyof typeof limiters;
        const start = performance.now();
        const d = await limiters[mode].check(`load:${w}`);
        log.push({ mode, start, end: performance.now(), d });
        if (d.degraded) await sleep(1); // no busy loop while everything fails fast
      }
    };
    const workers = Array.from({ length: 16 }, (_, w) => worker(w));

    await sleep(150);
    const killedAt = performance.now();
    server.kill('SIGKILL');
    await sleep(OUTAGE_MS);
    const restartAt = performance.now();
    server = await startRedis({ port: server.port });
    let recoveredAt = Number.POSITIVE_INFINITY;
    while (performance.now() - restartAt < 3000) {
      const probe = await limiters.closed.check('probe');
      if (!probe.degraded) {
        recoveredAt = performance.now();
        break;
      }
      await sleep(10);
    }
    await sleep(100);
    running = false;
    await Promise.all(workers);

    assert.ok(recoveredAt - restartAt < 1000, `recovered ${Math.round(recoveredAt - restartAt)} ms after restart`);
    const slowest = Math.max(...log.map((e) => e.end - e.start));
    assert.ok(slowest < TIMEOUT_MS + SLACK_MS, `slowest decision took ${Math.round(slowest)} ms`);
    const outage = log.filter((e) => e.start > killedAt + 20 && e.end < restartAt);
    assert.ok(outage.length > 50, `${outage.length} decisions during the outage`);
    for (const { mode, d } of outage) {
      assert.equal(d.degraded, true);
      if (mode === 'open') assert.equal(d.allowed, true);
      if (mode === 'closed') assert.equal(d.reason, 'store-unavailable');
    }
    // Insurance: each worker's key may pass twice (0.2% of 1000) in memory, however long the outage.
    const insured = outage.filter((e) => e.mode === 'insurance');
    assert.ok(insured.filter((e) => e.d.allowed).length <= 16 * 2);
    assert.ok(insured.some((e) => !e.d.allowed && e.d.limit === 2));
    assert.ok(
      log.some((e) => e.start > recoveredAt && !e.d.degraded),
      'load is served by Redis again',
    );
    assert.ok(errors.length > 0 && errors.every((e) => isSluiceError(e)));
    assert.deepEqual(listenerCounts(client), listenersBefore, 'no listener added or leaked');

    // The new Redis is empty and has no scripts: the store reloads them and counts exactly.
    const loadsBefore = store.stats().scriptLoads;
    const exact = createLimiter({ limit: 5, period: '1m', store, fail: 'closed', name: 'exact' });
    const allowed = [];
    for (let i = 0; i < 7; i++) allowed.push((await exact.check('after-restart')).allowed);
    assert.deepEqual(allowed, [true, true, true, true, true, false, false]);
    assert.ok(store.stats().scriptLoads >= loadsBefore);
    await store.close();
  });
});

describe('faults: SCRIPT FLUSH mid-run', () => {
  const redis = useRedis();

  it('reloads the scripts and keeps counting exactly', async () => {
    const { client } = redis;
    const store = createRedisStore({ client, timeoutMs: 2000, localCache: false });
    const limiter = createLimiter({ algorithm: 'sliding-log', limit: 300, period: '1h', store, fail: 'closed' });
    const many = createLimiter({
      store,
      fail: 'closed',
      limits: [
        { name: 'x', limit: 300, period: '1h' },
        { name: 'y', limit: 300, period: '1h', algorithm: 'gcra' },
      ],
    });
    let allowed = 0;
    let manyAllowed = 0;
    for (let round = 0; round < 8; round++) {
      if (round === 3 || round === 6) await client.script('FLUSH');
      const ds = await Promise.all(Array.from({ length: 50 }, () => limiter.check('k')));
      const ms = await Promise.all(Array.from({ length: 50 }, () => many.check('k')));
      assert.ok(ds.every((d) => !d.degraded) && ms.every((d) => !d.degraded));
      allowed += ds.filter((d) => d.allowed).length;
      manyAllowed += ms.filter((d) => d.allowed).length;
    }
    assert.equal(allowed, 300);
    assert.equal(manyAllowed, 300);
    assert.ok(store.stats().scriptLoads >= 2, `${store.stats().scriptLoads} script loads`);
    await store.close();
  });
});

describe('faults: a closed store', () => {
  const redis = useRedis();

  it('a limiter on it rejects with ERR_SLUICE_STORE_CLOSED (misuse is not a store failure), fail open or not', async () => {
    // The Redis store answers a limiter's failures with the limiter's failure policy itself (no .catch
    // in the limiter): a closed store must still reach the caller as an error, not as a degraded allow.
    const store = createRedisStore({ client: redis.client, prefix: 'faults-closed:', timeoutMs: 2000 });
    const open = createLimiter({ limit: 10, period: '1m', store, fail: 'open' });
    const closed = createLimiter({ limit: 10, period: '1m', store, fail: 'closed' });
    assert.equal((await open.check('k')).allowed, true);
    await store.close();
    for (const limiter of [open, closed]) {
      await assert.rejects(limiter.check('k'), { code: 'ERR_SLUICE_STORE_CLOSED' });
      await assert.rejects(limiter.peek('k'), { code: 'ERR_SLUICE_STORE_CLOSED' });
    }
    await assert.rejects(store.check('k', resolvePolicy({ limit: 10, period: '1m' }), 1, 0, true), {
      code: 'ERR_SLUICE_STORE_CLOSED',
    });
  });
});

describe('faults: a server that accepts and never answers', () => {
  let blackHole: Server;
  const sockets = new Set<Socket>();
  let port = 0;
  before(async () => {
    blackHole = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
    port = (blackHole.address() as { port: number }).port;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => blackHole.close(r));
  });

  for (const readyCheck of [true, false]) {
    it(`times out instead of hanging (ioredis enableReadyCheck: ${readyCheck})`, async () => {
      const client = new Redis(port, '127.0.0.1', { enableReadyCheck: readyCheck, maxRetriesPerRequest: 0 });
      client.on('error', () => {});
      const errors: string[] = [];
      // Never ready: commands wait for the first connection no longer than connectTimeoutMs.
      const store = createRedisStore({
        client,
        timeoutMs: TIMEOUT_MS,
        connectTimeoutMs: TIMEOUT_MS,
        onError: (e) => errors.push(e.code),
      });
      const open = createLimiter({ limit: 10, period: '1s', store, fail: 'open' });
      const closed = createLimiter({ limit: 10, period: '1s', store, fail: 'closed' });
      await sleep(50); // connected (the socket is accepted), never answered
      const start = performance.now();
      const [a, b] = await Promise.all([open.check('k'), closed.check('k')]);
      const took = performance.now() - start;
      assert.ok(took >= TIMEOUT_MS - 2 && took < TIMEOUT_MS + SLACK_MS, `took ${Math.round(took)} ms`);
      assert.deepEqual([a.allowed, a.degraded], [true, true]);
      assert.deepEqual([b.allowed, b.reason], [false, 'store-unavailable']);
      assert.ok(errors.includes('ERR_SLUICE_STORE_TIMEOUT'));
      assert.equal(store.isReady, false);
      await assert.rejects(store.ready(10), { code: 'ERR_SLUICE_STORE_TIMEOUT' });
      await assert.rejects(store.check('k', open.limits[0]?.policy as never, 1, Date.now(), true), {
        code: 'ERR_SLUICE_STORE_TIMEOUT',
      });
      await store.close();
      client.disconnect();
    });
  }
});
