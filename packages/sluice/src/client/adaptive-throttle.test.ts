import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { seededRandom } from '../../../../test/helpers/seeded-random.js';
import { createManualClock } from '../core/clock.js';
import { isSluiceError } from '../core/errors.js';
import { createClient } from './create-client.js';

const listen = (server: Server) =>
  new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)),
  );

/** A fetch that counts what really went out on the network. */
function counting() {
  const counts = { sent: 0 };
  const wrapped: typeof fetch = (input, init) => {
    counts.sent++;
    return fetch(input, init);
  };
  return { counts, fetch: wrapped };
}

describe('client: adaptive throttling against real servers', () => {
  let deadUrl: string;
  let slow: Server;
  let slowUrl: string;
  let healthy: Server;
  let healthyUrl: string;
  before(async () => {
    // A dead backend: a port that was listening and is closed (connection refused).
    const gone = createServer();
    deadUrl = await listen(gone);
    await new Promise((r) => gone.close(r));
    slow = createServer((_req, res) => setTimeout(() => res.end('late'), 300).unref());
    slowUrl = await listen(slow);
    healthy = createServer((_req, res) => res.end('ok'));
    healthyUrl = await listen(healthy);
  });
  after(() => {
    slow.closeAllConnections();
    slow.close();
    healthy.close();
  });

  it('a dead backend: throttled clients soon stop sending (at most a tenth of 300 requests go out)', async () => {
    const { counts, fetch } = counting();
    const api = createClient({ fetch, retries: 0, adaptiveThrottle: true, random: seededRandom(1) });
    let refusedLocally = 0;
    for (let i = 0; i < 300; i++) {
      await api.fetch(deadUrl).catch((e: unknown) => {
        if (isSluiceError(e, 'ERR_SLUICE_CLIENT_THROTTLED')) refusedLocally++;
      });
    }
    assert.equal(counts.sent + refusedLocally, 300);
    assert.ok(counts.sent <= 30, `sent ${counts.sent} of 300 to a dead backend`);
    // Without throttling, every one would have gone out.
    const plain = counting();
    const unthrottled = createClient({ fetch: plain.fetch, retries: 0 });
    for (let i = 0; i < 20; i++) await unthrottled.fetch(deadUrl).catch(() => {});
    assert.equal(plain.counts.sent, 20);
  });

  it('a slow backend: requests that time out count as refused', async () => {
    const { counts, fetch } = counting();
    const api = createClient({
      fetch,
      retries: 0,
      adaptiveThrottle: { k: 2, windowMs: 60_000 },
      random: seededRandom(2),
    });
    const errors: string[] = [];
    for (let i = 0; i < 40; i++)
      await api.fetch(slowUrl, { signal: AbortSignal.timeout(20) }).catch((e: { name?: string; code?: string }) => {
        errors.push(e.code ?? e.name ?? '?');
      });
    assert.equal(errors.length, 40);
    assert.ok(errors.includes('ERR_SLUICE_CLIENT_THROTTLED'));
    assert.ok(counts.sent < 20, `sent ${counts.sent} of 40 to a backend that always times out`);
  });

  it("the caller's own aborts count on neither side: half the calls aborted still leaves a 503 backend throttled", async () => {
    const refusing = createServer((_req, res) => res.writeHead(503).end());
    const refusingUrl = await listen(refusing);
    const clock = createManualClock(0);
    const api = createClient({ retries: 0, clock, adaptiveThrottle: true, random: seededRandom(5) });
    let throttled = 0;
    for (let i = 0; i < 100; i++) {
      // A call the user gave up on (navigated away): aborted once it is on its way to the slow backend.
      const ac = new AbortController();
      const gone = api.fetch(slowUrl, { signal: ac.signal });
      ac.abort();
      await gone.catch(() => {});
      await api.fetch(refusingUrl).then(
        (r) => assert.equal(r.status, 503),
        (e: unknown) => {
          assert.ok(isSluiceError(e, 'ERR_SLUICE_CLIENT_THROTTLED'));
          throttled++;
        },
      );
    }
    refusing.close();
    // Counted as accepts, the aborts balanced the 503s (K = 2) and nothing was throttled.
    assert.ok(throttled >= 80, `${throttled} of 100 calls to an always-503 backend throttled`);
  });

  it('sends normally again as the window forgets the outage (injected clock)', async () => {
    const clock = createManualClock(0);
    const { counts, fetch } = counting();
    const api = createClient({
      fetch,
      retries: 0,
      clock,
      adaptiveThrottle: { windowMs: 10_000 },
      random: seededRandom(4),
    });
    for (let i = 0; i < 100; i++) await api.fetch(deadUrl).catch(() => {});
    const duringOutage = counts.sent;
    clock.advance(11_000);
    counts.sent = 0;
    await api.fetch(healthyUrl);
    assert.equal(counts.sent, 1, 'the first request after the window goes out');
    assert.ok(duringOutage < 30);
  });

  it('bad options get coded errors', () => {
    for (const adaptiveThrottle of [{ k: 0 }, { windowMs: 10 }, 'yes'])
      assert.throws(() => createClient({ adaptiveThrottle: adaptiveThrottle as never }), {
        code: 'ERR_SLUICE_INVALID_OPTION',
      });
    for (const retryBudget of [{ ratio: -1 }, { minRetries: 1.5 }, { windowMs: 5 }])
      assert.throws(() => createClient({ retryBudget: retryBudget as never }), { code: 'ERR_SLUICE_INVALID_OPTION' });
  });
});

describe('client: retry budget against a real server answering 503', () => {
  it('retries at most minRetries plus a share of the requests', async () => {
    const server = createServer((_req, res) => res.writeHead(503, { 'retry-after': '0' }).end());
    const url = await listen(server);
    try {
      const { counts, fetch } = counting();
      const api = createClient({
        fetch,
        retries: 3,
        retryBudget: { ratio: 0.1, minRetries: 5, windowMs: 10_000 },
        sleep: async () => {},
      });
      for (let i = 0; i < 100; i++) assert.equal((await api.fetch(url)).status, 503);
      // Without a budget: 400 requests. With it: 100 first attempts, at most 5 + 10 % of 100 retries.
      assert.ok(counts.sent <= 100 + 15, `sent ${counts.sent}`);
      assert.ok(counts.sent >= 100 + 10, `sent ${counts.sent}: the budget still allows some retries`);
    } finally {
      server.close();
    }
  });
});
