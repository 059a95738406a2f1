/**
 * The middleware's `adaptive` option on every adapter, over real HTTP: past the limit a request is
 * shed with 503 and `Retry-After` (counted apart from 429s), and every place is given back — on
 * success, on a client that aborts, and behind a rate limit — so `inFlight` returns to 0.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { getRequestListener } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { rateLimit } from '../../src/adapters/express.js';
import { rateLimit as fastifyLimit } from '../../src/adapters/fastify.js';
import { rateLimit as honoLimit } from '../../src/adapters/hono.js';
import { rateLimit as koaLimit } from '../../src/adapters/koa.js';
import { rateLimit as nodeLimit } from '../../src/adapters/node.js';
import { createAdaptiveLimiter } from '../../src/adaptive/create-adaptive-limiter.js';
import {
  type AdapterHarness,
  express4Harness,
  express5Harness,
  fastifyHarness,
  holdRequests,
  honoHarness,
  koaHarness,
  nodeHarness,
} from './harness.js';

/** Waits (on real I/O, not a window) until `done()` holds; fails after `ms`. */
async function until(done: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) assert.fail(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const fixed = (limit: number) =>
  createAdaptiveLimiter({
    initialLimit: limit,
    minLimit: limit,
    maxLimit: limit,
    priorities: { critical: 0.5, batch: 0.5 },
  });
/** The priority from an `x-priority` header, for every framework's request (Hono's is its context). */
const priority = (req: unknown) => {
  const r = req as {
    headers?: Record<string, string | undefined>;
    req?: { header?: (n: string) => string | undefined };
  };
  const name = typeof r.req?.header === 'function' ? r.req.header('x-priority') : r.headers?.['x-priority'];
  return name ?? 'batch';
};

function scenarios(harness: AdapterHarness) {
  describe(`adaptive on ${harness.name}`, () => {
    it('sheds past the limit with 503 and Retry-After, and gives every place back', async () => {
      const limiter = fixed(2);
      const server = await harness.start({ adaptive: { limiter, priority } });
      try {
        const hold = holdRequests();
        const held = [fetch(`${server.url}/hold`), fetch(`${server.url}/hold`)];
        await until(() => limiter.inFlight === 2, 'two requests in flight');
        const shed = await fetch(`${server.url}/`);
        assert.equal(shed.status, 503);
        assert.equal(shed.headers.get('retry-after'), '1');
        assert.equal(((await shed.json()) as { error: { code: string } }).error.code, 'OVERLOADED');
        assert.equal(limiter.stats().priorities.batch?.shed, 1);
        hold.open();
        for (const r of await Promise.all(held)) assert.equal(r.status, 200, await r.text());
        await until(() => limiter.inFlight === 0, 'inFlight back to 0');
        assert.equal((await fetch(`${server.url}/`)).status, 200);
        await until(() => limiter.inFlight === 0, 'inFlight back to 0 after a success');
      } finally {
        await server.close();
      }
    });

    it('a client that aborts gives its place back', async () => {
      const limiter = fixed(4);
      const server = await harness.start({ adaptive: { limiter } });
      try {
        const hold = holdRequests();
        const controller = new AbortController();
        const aborted = fetch(`${server.url}/hold`, { signal: controller.signal }).catch((e: Error) => e);
        await hold.arrived;
        assert.equal(limiter.inFlight, 1);
        controller.abort();
        assert.ok((await aborted) instanceof Error);
        // The handler may still finish its work (Hono's does): the place is back once it has.
        hold.open();
        await until(() => limiter.inFlight === 0, 'inFlight back to 0 after an abort');
      } finally {
        await server.close();
      }
    });

    it('a client that hangs up while queued leaves the queue at once and never gets a place', async () => {
      const limiter = createAdaptiveLimiter({
        initialLimit: 1,
        minLimit: 1,
        maxLimit: 1,
        queue: { size: 2, timeoutMs: 60_000 },
      });
      const server = await harness.start({ adaptive: { limiter } });
      try {
        const hold = holdRequests();
        const first = fetch(`${server.url}/hold`);
        await hold.arrived;
        const gone = [new AbortController(), new AbortController()];
        const calls = gone.map((c) => fetch(`${server.url}/`, { signal: c.signal }).catch((e: Error) => e));
        await until(() => limiter.queued === 2, 'two clients queued');
        for (const c of gone) c.abort();
        await Promise.all(calls);
        await until(() => limiter.queued === 0, 'the clients that hung up left the queue');
        // Their places in the queue are free: a live client waits rather than being refused.
        const live = fetch(`${server.url}/`);
        await until(() => limiter.queued === 1, 'a live client queued');
        hold.open();
        assert.equal((await first).status, 200);
        assert.equal((await live).status, 200);
        await until(() => limiter.inFlight === 0, 'inFlight back to 0');
        assert.equal(limiter.stats().priorities.default?.admitted, 2, 'no place was taken for a gone client');
      } finally {
        await server.close();
      }
    });

    it('a request over the rate limit is a 429 and takes no place; overload is a 503', async () => {
      const limiter = fixed(1);
      const server = await harness.start({ limit: 2, period: '1m', adaptive: { limiter } });
      try {
        const hold = holdRequests();
        const first = fetch(`${server.url}/hold`);
        await hold.arrived;
        assert.equal((await fetch(`${server.url}/`)).status, 503);
        assert.equal((await fetch(`${server.url}/`)).status, 429);
        assert.equal(limiter.inFlight, 1);
        hold.open();
        assert.equal((await first).status, 200);
        await until(() => limiter.inFlight === 0, 'inFlight back to 0');
        assert.equal(limiter.stats().priorities.batch?.shed, 1, 'the 429 is not counted as shed');
      } finally {
        await server.close();
      }
    });
  });
}

for (const harness of [express5Harness, express4Harness, fastifyHarness, koaHarness, honoHarness, nodeHarness])
  scenarios(harness);

describe('adaptive option: bad values get coded errors', () => {
  it('bad options', () => {
    for (const adaptive of [{ algorithm: 'nope' }, { priority: 'critical' }, { limiter: fixed(1), initialLimit: 5 }, 7])
      assert.throws(
        () => rateLimit({ adaptive: adaptive as never }),
        (e: { code?: string }) =>
          ['ERR_SLUICE_INVALID_OPTION', 'ERR_SLUICE_ADAPTIVE_INVALID_OPTION'].includes(e.code ?? ''),
      );
  });
});

/** A server whose only route throws, behind `adaptive` (each framework answers 500 its own way). */
async function failingServer(framework: string, adaptive: object): Promise<{ url: string; close(): Promise<void> }> {
  const boom = () => {
    throw new Error('boom');
  };
  let listener: (req: IncomingMessage, res: ServerResponse) => void;
  if (framework === 'express') {
    const app = express();
    app.use(rateLimit({ adaptive }));
    app.get('/', boom);
    // Express logs a handler's error to stderr by default: answer it quietly instead.
    app.use((_e: unknown, _q: unknown, res: ServerResponse, _n: unknown) => void res.writeHead(500).end());
    listener = app;
  } else if (framework === 'fastify') {
    const app = Fastify();
    await app.register(fastifyLimit({ adaptive }));
    app.get('/', async () => boom());
    await app.listen({ port: 0, host: '127.0.0.1' });
    return {
      url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
      close: () => app.close(),
    };
  } else if (framework === 'koa') {
    const app = new Koa();
    app.silent = true;
    app.use(koaLimit({ adaptive }));
    app.use(boom);
    listener = app.callback();
  } else if (framework === 'hono') {
    const app = new Hono();
    app.use(honoLimit({ adaptive }));
    app.get('/', boom);
    app.onError((_e, c) => c.text('failed', 500));
    listener = getRequestListener(app.fetch);
  } else {
    listener = nodeLimit({ adaptive })(() => boom());
  }
  const server = createServer((req, res) => {
    try {
      listener(req, res);
    } catch {
      // node:http has no error handling of its own: a throwing listener is answered here.
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('adaptive: a handler that fails counts as dropped and gives its place back', () => {
  for (const framework of ['express', 'fastify', 'koa', 'hono', 'node:http'])
    it(framework, async () => {
      const limiter = createAdaptiveLimiter({ algorithm: 'aimd', initialLimit: 10, maxLimit: 100 });
      const server = await failingServer(framework, { limiter });
      try {
        // One window (10 requests, all in flight together so the limit is in use) of 500s.
        const replies = await Promise.all(Array.from({ length: 10 }, () => fetch(`${server.url}/`)));
        for (const r of replies) assert.equal(r.status, 500);
        await until(() => limiter.inFlight === 0, 'inFlight back to 0');
        // AIMD cut the limit by its backoff ratio: the 500s were fed back as drops.
        assert.equal(limiter.limit, 9);
      } finally {
        await server.close();
      }
    });
});

describe('adaptive with a queue: a client that leaves while its request waits holds nothing', () => {
  for (const harness of [express5Harness, fastifyHarness, koaHarness, nodeHarness])
    it(harness.name, async () => {
      const limiter = createAdaptiveLimiter({
        initialLimit: 1,
        minLimit: 1,
        maxLimit: 1,
        queue: { size: 4, timeoutMs: 5000 },
      });
      const server = await harness.start({ adaptive: { limiter } });
      try {
        const hold = holdRequests();
        const first = fetch(`${server.url}/hold`);
        await hold.arrived;
        const controller = new AbortController();
        const waiting = fetch(`${server.url}/`, { signal: controller.signal }).catch((e: Error) => e);
        await until(() => limiter.queued === 1, 'a request waiting in the queue');
        controller.abort();
        await waiting;
        // The connection is gone: give the server a moment to see it before the place frees.
        await new Promise((r) => setTimeout(r, 50));
        hold.open();
        assert.equal((await first).status, 200);
        await until(() => limiter.inFlight === 0 && limiter.queued === 0, 'nothing held after the queue drained');
      } finally {
        await server.close();
      }
    });
});

describe('adaptive on fastify: a route with limits of its own takes one place, not two', () => {
  it('route limit + plugin limit + adaptive', async () => {
    const limiter = fixed(4);
    const app = Fastify();
    await app.register(fastifyLimit({ limit: 100, period: '1m', adaptive: { limiter } }));
    app.get('/own', { config: { rateLimit: { limit: 5, period: '1m' } } }, async () => 'ok');
    app.get('/alone', { config: { rateLimit: { limit: 5, period: '1m', replaceGlobal: true } } }, async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      for (const path of ['/own', '/alone', '/']) assert.notEqual((await fetch(`${url}${path}`)).status, 503);
      await until(() => limiter.inFlight === 0, 'inFlight back to 0');
      // Three requests, three places: /own (route + plugin limiter), /alone (route only), / (a 404).
      assert.equal(limiter.stats().priorities.batch?.admitted, 3);
    } finally {
      await app.close();
    }
  });
});
