/**
 * A client that hangs up right after sending: its request still counts (the handler ran), and its concurrency place
 * is held until the handler has ended the response — on real node:http and Express servers.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import express from 'express';
import { rateLimit as expressLimit } from '../../src/adapters/express.js';
import { rateLimit as nodeLimit } from '../../src/adapters/node.js';
import { createManualClock } from '../../src/core/clock.js';
import type { RateLimitOptions } from '../../src/http/index.js';
import { until } from './harness.js';

/** A server whose `/work` handlers wait for `finish()` before answering; counts handlers started and running. */
interface Slow {
  url: string;
  started: number;
  running: number;
  /** Responses the server saw close (the client hung up). */
  closed: number;
  finish(): void;
  close(): Promise<void>;
}

type Start = (options: RateLimitOptions) => Promise<Slow>;

function slowHandler(state: Omit<Slow, 'url' | 'close'>, waiting: (() => void)[]) {
  return (_req: IncomingMessage, res: ServerResponse) => {
    state.started++;
    state.running++;
    res.once('close', () => state.closed++);
    waiting.push(() => {
      state.running--;
      res.end('done');
    });
  };
}

async function listen(server: Server, state: Omit<Slow, 'url' | 'close'>): Promise<Slow> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

function state(waiting: (() => void)[]): Omit<Slow, 'url' | 'close'> {
  return {
    started: 0,
    running: 0,
    closed: 0,
    finish: () => {
      for (const end of waiting.splice(0)) end();
    },
  };
}

const startNode: Start = (options) => {
  const waiting: (() => void)[] = [];
  const s = state(waiting);
  return listen(createServer(nodeLimit(options)(slowHandler(s, waiting))), s);
};

const startExpress: Start = (options) => {
  const waiting: (() => void)[] = [];
  const s = state(waiting);
  const app = express();
  app.use(expressLimit(options));
  app.get('/work', slowHandler(s, waiting));
  return listen(createServer(app), s);
};

/** Sends GET /work and hangs up once the handler has started. */
async function hitAndRun(server: Slow): Promise<void> {
  const before = server.started;
  const closedBefore = server.closed;
  const req = request(`${server.url}/work`);
  req.on('error', () => undefined);
  req.end();
  await until(() => server.started > before, 'the handler to start');
  req.destroy();
  await until(() => server.closed > closedBefore, 'the server to see the client leave');
}

/** GET /work, answered at once: its status (a 429), or 'ran' when the handler starts instead. */
function get(server: Slow): Promise<number | 'ran'> {
  const before = server.started;
  const answered = new Promise<number>((resolve, reject) => {
    const req = request(`${server.url}/work`, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
  const ran = until(() => server.started > before, 'the handler to start').then(() => 'ran' as const);
  return Promise.race([answered, ran]);
}

for (const [name, start] of [
  ['node:http', startNode],
  ['express', startExpress],
] as const) {
  describe(`${name}: a client that hangs up before the response`, () => {
    it('is counted under skipFailedRequests: hanging up is no way past the limit', async () => {
      const server = await start({ limit: 3, period: '1m', skipFailedRequests: true, clock: createManualClock(0) });
      try {
        for (let i = 0; i < 3; i++) await hitAndRun(server);
        assert.equal(await get(server), 429, 'a fourth request within the minute');
        assert.equal(server.started, 3);
        server.finish();
        await until(() => server.running === 0, 'the handlers to end');
        assert.equal(await get(server), 429, 'still counted once the handlers have ended');
        assert.equal(server.started, 3);
      } finally {
        await server.close();
      }
    });

    it('holds its concurrency place until the handler has ended the response', async () => {
      const server = await start({ limit: 100, period: '1m', concurrency: 2, clock: createManualClock(0) });
      try {
        await hitAndRun(server);
        await hitAndRun(server);
        assert.equal(await get(server), 429, 'two handlers still run: no place');
        assert.equal(server.running, 2);
        server.finish();
        await until(() => server.running === 0, 'the handlers to end');
        assert.equal(await get(server), 'ran', 'a place freed by the handlers that ended');
      } finally {
        await server.close();
      }
    });
  });
}
