/**
 * The remote store when the service is not there or misbehaves: the limiter's failure policies with the
 * real `sluice serve` stopped, a service that never answers (timeout), answers that are not what the
 * protocol says, and batching under concurrent callers.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type SluiceProcess, startSluice } from '../../../server/test/integration/helpers.js';
import { isSluiceError, type SluiceError } from '../../src/core/errors.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createRemoteStore } from '../../src/stores/remote/index.js';

let seq = 0;
const key = (label: string) => `${label}:${process.pid}:${++seq}`;

describe('remote store: failure policies with the service stopped', { timeout: 60_000 }, () => {
  let service: SluiceProcess;
  let url: string;
  const errors: SluiceError[] = [];
  let store: ReturnType<typeof createRemoteStore>;

  before(async () => {
    service = await startSluice();
    url = `http://127.0.0.1:${service.http}`;
    store = createRemoteStore({ url, timeoutMs: 5000, onError: (e) => errors.push(e) });
  });
  after(async () => {
    await store.close();
    await service.stop();
  });

  it('decides on the service while it runs, then each policy answers once it is stopped', async () => {
    const open = createLimiter({ limit: 2, period: '1h', store, fail: 'open', name: 'open' });
    const closed = createLimiter({ limit: 2, period: '1h', store, fail: 'closed', name: 'closed' });
    const insured = createLimiter({ limit: 2, period: '1h', store, fail: 'insurance', name: 'insured' });
    const k = key('stopped');
    for (const limiter of [open, closed, insured]) {
      const d = await limiter.check(k);
      assert.equal(d.allowed, true);
      assert.equal(d.degraded, undefined);
      assert.equal(d.remaining, 1);
    }
    await service.stop();

    const o = await open.check(k);
    assert.equal(o.allowed, true);
    assert.equal(o.degraded, true);
    const c = await closed.check(k);
    assert.equal(c.allowed, false);
    assert.equal(c.reason, 'store-unavailable');
    // Insurance: an in-memory limiter of the same policy, from zero.
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push((await insured.check(k)).allowed);
    assert.deepEqual(seen, [true, true, false]);
    // Several limits, all or nothing, and the other operations: failures, never hangs or crashes.
    const both = createLimiter({
      limits: [
        { name: 'a', limit: 5, period: '1m' },
        { name: 'b', limit: 5, period: '1h' },
      ],
      store,
      fail: 'closed',
    });
    assert.equal((await both.check(k)).allowed, false);
    await open.refund(k);
    // A reset cannot be answered by a policy: the caller learns that it did not happen.
    await assert.rejects(open.reset(k), (e) => isSluiceError(e, 'ERR_SLUICE_STORE_UNAVAILABLE'));
    await assert.rejects(store.acquire(k, 1, 1000, Date.now()), (e) =>
      isSluiceError(e, 'ERR_SLUICE_STORE_UNAVAILABLE'),
    );

    assert.equal(errors.length, 1, 'onError once per outage, not once per call');
    assert.equal(errors[0]?.code, 'ERR_SLUICE_STORE_UNAVAILABLE');
    assert.match(errors[0]?.message ?? '', /unreachable/);
    assert.ok(store.stats().errors >= 5);
  });
});

/** A loopback server that answers /v1/check with `answer`, standing in for a broken service. */
async function fakeService(
  answer: (res: ServerResponse, body: string) => void,
): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (b: Buffer) => {
      body += b.toString();
    });
    req.on('end', () => answer(res, body));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, server };
}

describe('remote store: a service that misbehaves', { timeout: 60_000 }, () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });
  const policy = resolvePolicy({ limit: 5, period: 1000 });

  async function storeAgainst(answer: (res: ServerResponse, body: string) => void, timeoutMs = 2000) {
    const fake = await fakeService(answer);
    servers.push(fake.server);
    return createRemoteStore({ url: fake.url, timeoutMs });
  }

  it('never answering: the call times out with ERR_SLUICE_STORE_TIMEOUT and fail-open passes', async () => {
    const store = await storeAgainst(() => {}, 100);
    await assert.rejects(store.check('k', policy, 1, 0, true), (e) => isSluiceError(e, 'ERR_SLUICE_STORE_TIMEOUT'));
    const limiter = createLimiter({ limit: 5, period: 1000, store, fail: 'open' });
    assert.equal((await limiter.check('k')).degraded, true);
    assert.equal(store.stats().timeouts, 2);
  });

  const broken: [string, (res: ServerResponse, body: string) => void][] = [
    ['HTTP 500', (res) => res.writeHead(500).end('{"error":{"code":"ERR_SLUICE_INTERNAL","message":"boom"}}')],
    ['HTTP 502 from a proxy, not JSON', (res) => res.writeHead(502).end('<html>bad gateway</html>')],
    ['200 that is not JSON', (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"results":')],
    ['200 with too few results', (res) => res.writeHead(200).end('{"results":[]}')],
    ['200 with a result that is no decision', (res) => res.writeHead(200).end('{"results":[{"allowed":"yes"}]}')],
    ['the connection dropped mid-answer', (res) => res.socket?.destroy()],
    [
      'a per-check error from the service store',
      (res) =>
        res.writeHead(200).end('{"results":[{"error":{"code":"ERR_SLUICE_STORE_TIMEOUT","message":"redis is slow"}}]}'),
    ],
  ];
  for (const [name, answer] of broken) {
    it(`${name}: a store failure, so the limiter's policy answers`, async () => {
      const store = await storeAgainst(answer);
      await assert.rejects(store.check('k', policy, 1, 0, true), (e) =>
        isSluiceError(e, 'ERR_SLUICE_STORE_UNAVAILABLE'),
      );
      const limiter = createLimiter({ limit: 5, period: 1000, store, fail: 'closed' });
      assert.equal((await limiter.check('k')).reason, 'store-unavailable');
    });
  }

  it('a request the service refuses (400) is misuse, reported to the caller, not hidden by the policy', async () => {
    const store = await storeAgainst((res) =>
      res.writeHead(400).end('{"error":{"code":"ERR_SLUICE_TOO_MANY_ITEMS","message":"too many"}}'),
    );
    const limiter = createLimiter({ limit: 5, period: 1000, store, fail: 'open' });
    await assert.rejects(limiter.check('k'), (e) => isSluiceError(e, 'ERR_SLUICE_SERVICE_REJECTED'));
  });

  it('a service without the store operations (an older sluice-server) is named as such', async () => {
    const store = await storeAgainst((res) =>
      res
        .writeHead(200)
        .end('{"results":[{"error":{"code":"ERR_SLUICE_UNKNOWN_OPTION","message":"checks[0].op: unknown option"}}]}'),
    );
    await assert.rejects(store.reset('k', policy), (e) => isSluiceError(e, 'ERR_SLUICE_SERVICE_TOO_OLD'));
  });
});

describe('remote store: batching and lifecycle', { timeout: 60_000 }, () => {
  let service: SluiceProcess;
  let url: string;
  before(async () => {
    service = await startSluice();
    url = `http://127.0.0.1:${service.http}`;
  });
  after(() => service.stop());

  it('64 concurrent checks of one key go out as one request and admit exactly the limit', async () => {
    const store = createRemoteStore({ url, timeoutMs: 5000 });
    const limiter = createLimiter({ limit: 10, period: '1h', store });
    const k = key('batch');
    const decisions = await Promise.all(Array.from({ length: 64 }, () => limiter.check(k)));
    assert.equal(decisions.filter((d) => d.allowed).length, 10);
    assert.equal(store.stats().requests, 1);
    assert.equal(store.stats().operations, 64);
    await store.close();
  });

  it('more than maxBatch at once: several requests, still exact', async () => {
    const store = createRemoteStore({ url, timeoutMs: 5000, maxBatch: 16 });
    const limiter = createLimiter({
      limits: [
        { name: 's', limit: 7, period: '1h' },
        { name: 'l', limit: 100, period: '1d' },
      ],
      store,
    });
    const k = key('chunks');
    const decisions = await Promise.all(Array.from({ length: 40 }, () => limiter.check(k)));
    assert.equal(decisions.filter((d) => d.allowed).length, 7);
    assert.ok(store.stats().requests >= 5, `${store.stats().requests} requests`);
    await store.close();
  });

  it('a flood on a key over its limit is answered in-process (the local cache), until a refund', async () => {
    const store = createRemoteStore({ url, timeoutMs: 5000 });
    const limiter = createLimiter({ limit: 3, period: '1h', store });
    const k = key('flood');
    for (let i = 0; i < 4; i++) await limiter.check(k);
    const sent = store.stats().operations;
    for (let i = 0; i < 100; i++) {
      const d = await limiter.check(k);
      assert.equal(d.allowed, false);
      assert.ok(d.retryAfterMs > 0);
    }
    assert.equal(store.stats().operations, sent, 'no request for a key known to be over');
    assert.equal(store.stats().localCacheHits, 100);
    await limiter.refund(k);
    assert.equal((await limiter.check(k)).allowed, true, 'a refund reaches the service again');
    await store.close();
  });

  it('after close(), calls fail with ERR_SLUICE_STORE_CLOSED', async () => {
    const store = createRemoteStore({ url });
    await store.close();
    await assert.rejects(store.check('k', resolvePolicy({ limit: 1, period: 1000 }), 1, 0, true), (e) =>
      isSluiceError(e, 'ERR_SLUICE_STORE_CLOSED'),
    );
  });

  it('bad options are refused at construction, naming the option', () => {
    for (const [options, option] of [
      [{ url: 'not a url' }, 'url'],
      [{ url: 'ftp://127.0.0.1' }, 'url'],
      [{ url, timeoutMs: 0 }, 'timeoutMs'],
      [{ url, clock: 'mine' }, 'clock'],
      [{ url, maxBatch: 5000 }, 'maxBatch'],
      [{ url, localCache: { maxKeys: 0 } }, 'localCache.maxKeys'],
    ] as const) {
      assert.throws(
        () => createRemoteStore(options as never),
        (e) => isSluiceError(e, 'ERR_SLUICE_INVALID_OPTION') && e.option === option,
      );
    }
  });
});
