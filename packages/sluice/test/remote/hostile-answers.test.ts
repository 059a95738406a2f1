/**
 * Issue 37, item 6: `sluice/remote` against a server that answers what no sluice service would — an
 * endless body (it drove the application from 64 to 910 MB within one timeout), answers past the
 * per-operation cap, and results with `limit: 'lots'`, `NaN`, `Infinity` or fields of the wrong type
 * (passed on as decisions). Real HTTP servers on loopback, in this process: the body must be cut off as it
 * arrives, and every bad answer must be a store failure, so the limiter's `fail` policy answers.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, describe, it } from 'node:test';
import { isSluiceError, type SluiceError } from '../../src/core/errors.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createRemoteStore } from '../../src/stores/remote/index.js';

const MB = 1024 * 1024;
/** What the endless server sends at most, so the old code could not take the test machine down with it. */
const ENDLESS_LIMIT_BYTES = 256 * MB;
/** Bound on this process's RSS growth while the endless body is refused (the old code grew by hundreds of MB). */
const MAX_RSS_GROWTH_BYTES = 48 * MB;

const servers: Server[] = [];
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

/** A loopback server answering each request with `answer(res, checks)`, `checks` the request's item count. */
async function serve(answer: (res: ServerResponse, checks: number) => void): Promise<string> {
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (b: Buffer) => {
      body += b.toString();
    });
    req.on('end', () => answer(res, (JSON.parse(body) as { checks: unknown[] }).checks.length));
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** A valid decision result padded with spaces to `bytes` (JSON allows any whitespace). */
const padded = (bytes: number) =>
  `{"allowed":true,"limit":5,"remaining":4,"resetMs":1000,"retryAfterMs":0}${' '.repeat(bytes)}`;

const policy = resolvePolicy({ limit: 5, period: 1000 });

describe('remote store: an endless or oversized answer is cut off (issue 37: 6)', { timeout: 60_000 }, () => {
  it('an endless body: refused after the cap, memory stays small, the failure policy answers', async () => {
    let sent = 0;
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"results":[');
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (!res.destroyed && sent < ENDLESS_LIMIT_BYTES) {
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        if (!res.destroyed) res.end(']}');
      };
      pump();
    });
    const errors: SluiceError[] = [];
    // A long timeout, so the cap (not the timer) has to stop the read.
    const store = createRemoteStore({ url, timeoutMs: 10_000, batch: false, onError: (e) => errors.push(e) });
    const before = process.memoryUsage.rss();
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 5);
    try {
      await assert.rejects(store.check('k', policy, 1, 0, true), (e) =>
        isSluiceError(e, 'ERR_SLUICE_STORE_UNAVAILABLE'),
      );
      const open = createLimiter({ limit: 5, period: 1000, store, fail: 'open' });
      const o = await open.check('k');
      assert.equal(o.allowed, true);
      assert.equal(o.degraded, true);
      const closed = createLimiter({ limit: 5, period: 1000, store, fail: 'closed' });
      assert.equal((await closed.check('k')).reason, 'store-unavailable');
    } finally {
      clearInterval(sampler);
      peak = Math.max(peak, process.memoryUsage.rss());
    }
    const growth = peak - before;
    console.log(`endless body: RSS growth ${(growth / MB).toFixed(1)} MB, server wrote ${(sent / MB).toFixed(1)} MB`);
    assert.ok(growth < MAX_RSS_GROWTH_BYTES, `RSS grew by ${(growth / MB).toFixed(1)} MB`);
    // The connection was dropped: the server could only fill the socket buffers, not send its 256 MB.
    assert.ok(sent < ENDLESS_LIMIT_BYTES / 4, `the server wrote ${(sent / MB).toFixed(1)} MB`);
    assert.equal(errors[0]?.code, 'ERR_SLUICE_STORE_UNAVAILABLE');
    assert.equal(errors[0]?.option, 'maxResponseBytesPerCheck');
    assert.match(errors[0]?.message ?? '', /larger than 4096 bytes.*maxResponseBytesPerCheck/);
    await store.close();
  });

  it('the cap is per operation: 3 KB per check passes, alone and in a batch of 10; 5 KB per check does not', async () => {
    let perCheck = 3000;
    const url = await serve((res, checks) => {
      res.writeHead(200).end(`{"results":[${Array.from({ length: checks }, () => padded(perCheck)).join(',')}]}`);
    });
    const store = createRemoteStore({ url, timeoutMs: 5000 });
    assert.equal((await store.check('a', policy, 1, 0, true)).allowed, true);
    const batch = Array.from({ length: 10 }, (_, i) => ({ key: `b${i}`, policy, cost: 1 }));
    assert.equal((await store.checkMany(batch, 0, true)).length, 10);
    perCheck = 5000;
    await assert.rejects(store.check('c', policy, 1, 0, true), (e) => isSluiceError(e, 'ERR_SLUICE_STORE_UNAVAILABLE'));
    await assert.rejects(store.checkMany(batch, 0, true), (e) => isSluiceError(e, 'ERR_SLUICE_STORE_UNAVAILABLE'));
    // A user whose proxy really pads that much can say so.
    const roomy = createRemoteStore({ url, timeoutMs: 5000, maxResponseBytesPerCheck: 8192 });
    assert.equal((await roomy.check('d', policy, 1, 0, true)).allowed, true);
    await store.close();
    await roomy.close();
  });

  it('a declared Content-Length past the cap is refused before the body is read', async () => {
    const url = await serve((res) => {
      // Declares 100 MB and sends only the headers: reading would wait for the timeout.
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(100 * MB) });
      res.write('{"results":[');
    });
    const store = createRemoteStore({ url, timeoutMs: 5000 });
    await assert.rejects(store.check('k', policy, 1, 0, true), (e) => {
      assert.ok(isSluiceError(e, 'ERR_SLUICE_STORE_UNAVAILABLE'), String(e));
      assert.match(e.message, /Content-Length/);
      return true;
    });
    assert.equal(store.stats().timeouts, 0);
    await store.close();
  });

  it('bad options for the cap are refused at construction', () => {
    for (const value of [0, 1023, 1.5, 2 ** 24 + 1, '4kb']) {
      assert.throws(
        () => createRemoteStore({ url: 'http://127.0.0.1:1', maxResponseBytesPerCheck: value as number }),
        (e) => isSluiceError(e, 'ERR_SLUICE_INVALID_OPTION') && e.option === 'maxResponseBytesPerCheck',
      );
    }
  });
});

describe('remote store: results that are not the protocol are refused, not passed on (issue 37: 6)', () => {
  const decision = { allowed: true, limit: 5, remaining: 4, resetMs: 1000, retryAfterMs: 0 };
  // Raw JSON: `1e999` parses to Infinity, which JSON.stringify could not write.
  const cases: [string, string, RegExp][] = [
    ["limit: 'lots'", JSON.stringify({ ...decision, limit: 'lots' }), /results\[0\]\.limit: .*"lots"/],
    ['remaining: "NaN"', JSON.stringify({ ...decision, remaining: 'NaN' }), /results\[0\]\.remaining/],
    ['resetMs: 1e999 (Infinity)', JSON.stringify(decision).replace('"resetMs":1000', '"resetMs":1e999'), /resetMs/],
    ['retryAfterMs: -1', JSON.stringify({ ...decision, retryAfterMs: -1 }), /retryAfterMs/],
    ['remaining as an array', JSON.stringify({ ...decision, remaining: [4] }), /remaining/],
    ['degraded: "yes"', JSON.stringify({ ...decision, degraded: 'yes' }), /degraded/],
    ['delayMs: "5"', JSON.stringify({ ...decision, delayMs: '5' }), /delayMs/],
    ['a null result', 'null', /results\[0\]: expected an object/],
    ['an error with a code that is not sluice’s', '{"error":{"code":"lots","message":"x"}}', /error\.code/],
  ];
  for (const [name, result, problem] of cases) {
    it(`${name}: a store failure naming the field, and the limiter's policy answers`, async () => {
      const url = await serve((res) => res.writeHead(200).end(`{"results":[${result}]}`));
      const store = createRemoteStore({ url, timeoutMs: 5000 });
      await assert.rejects(store.check('k', policy, 1, 0, true), (e) => {
        assert.ok(isSluiceError(e, 'ERR_SLUICE_STORE_UNAVAILABLE'), String(e));
        assert.match(e.message, problem);
        return true;
      });
      const closed = createLimiter({ limit: 5, period: 1000, store, fail: 'closed' });
      const d = await closed.check('k');
      assert.equal(d.allowed, false);
      assert.equal(d.reason, 'store-unavailable');
      await store.close();
    });
  }

  it('a lease whose id is not a string: the acquire fails, no lease is handed out', async () => {
    const url = await serve((res) =>
      res.writeHead(200).end(`{"results":[${JSON.stringify({ ...decision, lease: { id: 5, expiresAt: 1 } })}]}`),
    );
    const store = createRemoteStore({ url, timeoutMs: 5000 });
    await assert.rejects(store.acquire('k', 1, 1000, 0), (e) => {
      assert.ok(isSluiceError(e, 'ERR_SLUICE_STORE_UNAVAILABLE'), String(e));
      assert.match(e.message, /lease\.id/);
      return true;
    });
    await store.close();
  });
});
