/**
 * Shape mode with clients that leave while held: a held request whose client hangs up gives its place in the queue
 * back at once (the requests behind it wait less) and its handler never runs — on real node:http and Express servers.
 * The delay is an injected sleep the test ends by hand; the clock does not move.
 */
import assert from 'node:assert/strict';
import { type ClientRequest, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import express from 'express';
import { rateLimit as expressLimit } from '../../src/adapters/express.js';
import { rateLimit as nodeLimit } from '../../src/adapters/node.js';
import { createManualClock } from '../../src/core/clock.js';
import type { RateLimitOptions } from '../../src/http/index.js';
import { until } from './harness.js';
import { T0 } from './suite.js';

type Serve = (options: RateLimitOptions, handler: () => string) => Server;

const servers: [string, Serve][] = [
  ['node:http', (options, handler) => createServer(nodeLimit(options)((_req, res) => res.end(handler())))],
  [
    'express',
    (options, handler) => {
      const app = express();
      app.use(expressLimit(options));
      app.get('/', (_req, res) => void res.send(handler()));
      return createServer(app);
    },
  ],
];

for (const [name, serve] of servers) {
  describe(`shape mode on ${name}: a client that leaves while held`, () => {
    it('gives its place back and its handler never runs', async () => {
      const delays: number[] = [];
      const sleeping: (() => void)[] = [];
      let ran = 0;
      // 1 a second, a queue of 10: with the clock still, each request waits 1000 ms more than the one before.
      const server = serve(
        {
          mode: 'shape',
          limit: 1,
          period: '1s',
          burst: 10,
          maxDelayMs: 60_000,
          clock: createManualClock(T0),
          sleep: (ms) => {
            delays.push(ms);
            return new Promise<void>((resolve) => sleeping.push(resolve));
          },
        },
        () => String(++ran),
      );
      let closed = 0;
      server.on('request', (_req, res) => res.once('close', () => closed++));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const get = () =>
        new Promise<{ req: ClientRequest; done: Promise<number> }>((resolve) => {
          let status!: (n: number) => void;
          const done = new Promise<number>((r) => {
            status = r;
          });
          const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
            res.resume();
            res.on('end', () => status(res.statusCode ?? 0));
          });
          req.on('error', () => status(0));
          req.end();
          resolve({ req, done });
        });
      try {
        assert.equal(await (await get()).done, 200, 'the first passes at once');
        const held = await Promise.all([get(), get(), get()]);
        await until(() => delays.length === 3, 'three requests held');
        assert.deepEqual(delays, [1000, 2000, 3000]);
        for (const { req } of held) req.destroy();
        await until(() => closed === 4, 'the server saw the three clients leave');
        // Their places are back: the next request is second in the queue, not fifth.
        const next = await get();
        await until(() => delays.length === 4, 'the next request held');
        assert.equal(delays[3], 1000);
        for (const wake of sleeping.splice(0)) wake();
        assert.equal(await next.done, 200);
        assert.equal(ran, 2, 'the handler ran for the first and the last request only');
      } finally {
        for (const wake of sleeping.splice(0)) wake();
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });
  });
}
