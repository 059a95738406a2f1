/**
 * The adaptive gate and the client's connection, on real servers: a client that hangs up while queued
 * leaves the queue (its handler never runs), and a client that never reads its response does not keep
 * its place once the handler has ended the response.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { describe, it } from 'node:test';
import express from 'express';
import { rateLimit as expressLimit } from '../../src/adapters/express.js';
import { rateLimit as nodeLimit } from '../../src/adapters/node.js';
import type { AdaptiveLimiter } from '../../src/adaptive/create-adaptive-limiter.js';
import { createAdaptiveLimiter } from '../../src/adaptive/create-adaptive-limiter.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** Waits (turn by turn of the event loop, no timers) until `ready` holds. */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise((r) => setImmediate(r));
}

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

const SERVERS: Record<string, (limiter: AdaptiveLimiter, handler: Handler) => Server> = {
  'node:http': (limiter, handler) => createServer(nodeLimit({ adaptive: { limiter } })(handler)),
  Express: (limiter, handler) => {
    const app = express();
    app.use(expressLimit({ adaptive: { limiter } }));
    app.use((req, res) => handler(req, res));
    return createServer(app);
  },
};

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    r.on('error', reject);
    r.end();
  });
}

for (const [name, serve] of Object.entries(SERVERS)) {
  describe(`adaptive queue on ${name}: clients that hang up while queued`, () => {
    it('leave the queue at once, their handlers never run, and a live client takes the freed place', async () => {
      const limiter = createAdaptiveLimiter({
        initialLimit: 1,
        minLimit: 1,
        maxLimit: 1,
        queue: { size: 3, timeoutMs: 60_000 },
      });
      const ran: string[] = [];
      let finishHold = () => {};
      const server = serve(limiter, (req, res) => {
        ran.push(req.url ?? '');
        if (req.url === '/hold') finishHold = () => res.end('held');
        else res.end(`ok ${req.url}`);
      });
      const port = await listen(server);
      try {
        const held = get(port, '/hold');
        await until(() => limiter.inFlight === 1);
        const gone = ['/a', '/b', '/c'].map((path) => {
          const r = request({ host: '127.0.0.1', port, path, agent: false });
          r.on('error', () => {});
          r.end();
          return r;
        });
        await until(() => limiter.queued === 3);
        for (const r of gone) r.destroy();
        await until(() => limiter.queued === 0);
        // The queue has room again: a live client waits in it rather than being refused as queue-full.
        const live = get(port, '/live');
        await until(() => limiter.queued === 1);
        finishHold();
        assert.deepEqual(await held, { status: 200, body: 'held' });
        assert.deepEqual(await live, { status: 200, body: 'ok /live' });
        assert.deepEqual(ran, ['/hold', '/live'], 'no handler ran for a client that had gone');
        assert.equal(limiter.inFlight, 0);
      } finally {
        server.closeAllConnections();
        server.close();
      }
    });
  });

  describe(`adaptive gate on ${name}: clients that never read their response`, () => {
    it('do not keep the limit full once their handlers have ended the response', async () => {
      const limiter = createAdaptiveLimiter({ initialLimit: 2, minLimit: 2, maxLimit: 2 });
      const big = Buffer.alloc(8 * 1024 * 1024, 120);
      let ended = 0;
      const server = serve(limiter, (req, res) => {
        if (req.url !== '/big') return void res.end('small');
        res.end(big);
        ended++;
      });
      const port = await listen(server);
      const readers = [1, 2].map(() => {
        const s = connect(port, '127.0.0.1');
        s.on('error', () => {});
        s.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
        s.pause();
        return s;
      });
      try {
        await until(() => ended === 2);
        // 8 MiB each is far more than the sockets take unread: both responses are still being sent.
        assert.equal(limiter.inFlight, 0, 'the places were given back when the handlers ended');
        assert.deepEqual(await get(port, '/small'), { status: 200, body: 'small' });
      } finally {
        for (const s of readers) s.destroy();
        server.closeAllConnections();
        server.close();
      }
    });
  });
}
