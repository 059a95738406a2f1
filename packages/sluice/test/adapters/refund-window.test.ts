/**
 * skipFailedRequests on a real Express server with a manual clock: a slow request that fails after the window
 * rolled is refunded to the window that counted it, so the new window still holds at most the limit.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import express from 'express';
import { rateLimit } from '../../src/adapters/express.js';
import { createManualClock, type ManualClock } from '../../src/core/clock.js';
import type { AlgorithmName } from '../../src/core/policy.js';
import { until } from './harness.js';

/** The start of a window of one second. */
const W = 1_700_000_000_000;

interface App {
  url: string;
  clock: ManualClock;
  /** `/slow` requests waiting in their handler (their check is done). */
  waiting: (() => void)[];
  close(): Promise<void>;
}

async function start(algorithm: AlgorithmName): Promise<App> {
  const clock = createManualClock(W);
  const waiting: (() => void)[] = [];
  const app = express();
  app.use(rateLimit({ algorithm, limit: 2, period: 1000, skipFailedRequests: true, clock }));
  app.get('/slow', (_req, res) => void waiting.push(() => res.status(500).end('failed')));
  app.get('/ok', (_req, res) => void res.end('ok'));
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    clock,
    waiting,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const status = async (app: App, path: string) => (await fetch(`${app.url}${path}`)).status;

/** Sends `/slow` and waits until its handler holds it (it was charged at the clock's time); answer() fails it. */
async function slowRequest(app: App): Promise<{ answer(): Promise<number> }> {
  const reply = status(app, '/slow');
  await until(() => app.waiting.length > 0, 'the slow request to reach its handler');
  return {
    answer: () => {
      for (const fail of app.waiting.splice(0)) fail();
      return reply;
    },
  };
}

describe('skipFailedRequests: a failed request refunded after the window rolled', () => {
  it('fixed-window: is not refunded from the new window', async () => {
    const app = await start('fixed-window');
    try {
      app.clock.set(W + 900);
      const slow = await slowRequest(app);
      app.clock.set(W + 1050);
      assert.equal(await status(app, '/ok'), 200);
      assert.equal(await status(app, '/ok'), 200);
      assert.equal(await slow.answer(), 500);
      assert.equal(await status(app, '/ok'), 429, 'a third success in one window');
    } finally {
      await app.close();
    }
  });

  it("sliding-log: gives back its own entry, not a later request's", async () => {
    const app = await start('sliding-log');
    try {
      const slow = await slowRequest(app);
      app.clock.set(W + 500);
      assert.equal(await status(app, '/ok'), 200);
      app.clock.set(W + 600);
      assert.equal(await slow.answer(), 500);
      assert.equal(await status(app, '/ok'), 200, 'the failed request gave its unit back');
      app.clock.set(W + 1100);
      assert.equal(await status(app, '/ok'), 429, 'the last second holds the successes at +500 and +600');
    } finally {
      await app.close();
    }
  });
});
