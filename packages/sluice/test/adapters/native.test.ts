/**
 * What each adapter does natively: custom rejection handlers, errors thrown by options, and (Hono)
 * headers on responses the handler builds itself.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import express5 from 'express';
import express4 from 'express4';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { rateLimit as expressLimit } from '../../src/adapters/express.js';
import { rateLimit as fastifyLimit } from '../../src/adapters/fastify.js';
import { rateLimit as honoLimit } from '../../src/adapters/hono.js';
import { rateLimit as koaLimit } from '../../src/adapters/koa.js';
import { rateLimit as nodeLimit } from '../../src/adapters/node.js';
import { createManualClock } from '../../src/core/clock.js';
import { T0 } from './suite.js';

const boom = () => {
  throw new Error('boom');
};

async function withServer(server: Server, body: (url: string) => Promise<void>) {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await body(`http://127.0.0.1:${port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

for (const [name, create] of [
  ['express 5', express5],
  ['express 4', express4],
] as const) {
  describe(name, () => {
    it('custom handler; async options; a throwing option goes to the error handler', async () => {
      const app = create();
      app.use('/boom', expressLimit({ limit: 1, period: '1m', key: boom }));
      app.use(
        expressLimit({
          limit: 1,
          period: '1m',
          clock: createManualClock(T0),
          key: async () => 'k',
          handler: (_req, res, _next, rejection) => void res.status(420).json({ calm: rejection.retryAfter }),
        }),
      );
      app.get('/', (_req, res) => void res.send('ok'));
      app.use((_err: unknown, _req: unknown, res: express5.Response, _next: unknown) => void res.status(599).end());
      await withServer(createServer(app), async (url) => {
        assert.equal((await fetch(url)).status, 200);
        const r = await fetch(url);
        assert.equal(r.status, 420);
        assert.equal(r.headers.get('x-ratelimit-remaining'), '0');
        assert.deepEqual(await r.json(), { calm: 60 });
        assert.equal((await fetch(`${url}/boom`)).status, 599);
      });
    });
  });
}

describe('koa', () => {
  it('custom handler; a throwing option is a Koa error', async () => {
    const app = new Koa();
    app.use(async (ctx, next) => {
      if (ctx.path !== '/boom') return next();
      await koaLimit({ limit: 1, period: '1m', key: boom })(ctx, next);
    });
    app.use(
      koaLimit({
        limit: 1,
        period: '1m',
        clock: createManualClock(T0),
        handler: (ctx, _next, rejection) => {
          ctx.status = 420;
          ctx.body = { calm: rejection.retryAfter };
        },
      }),
    );
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    app.silent = true;
    await withServer(createServer(app.callback()), async (url) => {
      assert.equal((await fetch(url)).status, 200);
      const r = await fetch(url);
      assert.equal(r.status, 420);
      assert.equal(r.headers.get('retry-after'), '60');
      assert.deepEqual(await r.json(), { calm: 60 });
      assert.equal((await fetch(`${url}/boom`)).status, 500);
    });
  });
});

describe('hono', () => {
  it('sets headers on responses the handler makes itself, even immutable ones; custom handler', async () => {
    const app = new Hono();
    app.use(
      '/limited/*',
      honoLimit({
        limit: 1,
        period: '1m',
        clock: createManualClock(T0),
        handler: (c, r) => c.json({ calm: r.retryAfter }, 418),
      }),
    );
    app.use('*', honoLimit({ limit: 5, period: '1m', clock: createManualClock(T0) }));
    app.get('/raw', () => new Response('raw'));
    app.get('/redirect', () => Response.redirect('http://example.com/', 302));
    app.get('/limited/x', (c) => c.text('ok'));
    await new Promise<void>((resolve, reject) => {
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, async (info) => {
        const url = `http://127.0.0.1:${info.port}`;
        try {
          const raw = await fetch(`${url}/raw`);
          assert.equal(await raw.text(), 'raw');
          assert.equal(raw.headers.get('ratelimit'), '"default";r=4;t=60');
          const redirect = await fetch(`${url}/redirect`, { redirect: 'manual' });
          assert.equal(redirect.status, 302);
          assert.equal(redirect.headers.get('ratelimit'), '"default";r=3;t=60');
          assert.equal((await fetch(`${url}/limited/x`)).status, 200);
          const r = await fetch(`${url}/limited/x`);
          assert.equal(r.status, 418);
          assert.equal(r.headers.get('retry-after'), '60');
          assert.deepEqual(await r.json(), { calm: 60 });
          resolve();
        } catch (error) {
          reject(error);
        } finally {
          (server as Server).closeAllConnections();
          server.close();
        }
      });
    });
  });
});

describe('node:http', () => {
  it('custom handler; a throwing option answers 500, or what onError says', async () => {
    const ok = (_req: unknown, res: { end(s: string): void }) => res.end('ok');
    const limited = nodeLimit({
      limit: 1,
      period: '1m',
      clock: createManualClock(T0),
      handler: (_req, res, rejection) => {
        res.statusCode = 420;
        res.end(String(rejection.retryAfter));
      },
    })(ok);
    const broken = nodeLimit({ limit: 1, period: '1m', key: boom })(ok);
    const brokenAsync = nodeLimit({
      limit: 1,
      period: '1m',
      key: async () => boom(),
      onError: (_e, _req, res) => {
        res.statusCode = 599;
        res.end();
      },
    })(ok);
    const server = createServer((req, res) => {
      if (req.url === '/boom') broken(req, res);
      else if (req.url === '/boom-async') brokenAsync(req, res);
      else limited(req, res);
    });
    await withServer(server, async (url) => {
      assert.equal((await fetch(url)).status, 200);
      const r = await fetch(url);
      assert.equal(r.status, 420);
      assert.equal(await r.text(), '60');
      assert.equal((await fetch(`${url}/boom`)).status, 500);
      assert.equal((await fetch(`${url}/boom-async`)).status, 599);
    });
  });
});

// A library that rejects without a reason (`throw undefined`) must not turn the limit off: frameworks read
// next(undefined) / done(undefined) as "go on", and Koa ignores a null error and never answers.
describe('an option function that throws or rejects with undefined or null', () => {
  const falsy = [
    ['rejects with undefined', async () => Promise.reject(undefined)],
    [
      'throws null',
      () => {
        throw null;
      },
    ],
  ] as const;
  for (const [how, key] of falsy) {
    it(`${how}: express, koa and fastify answer 500 and never run the handler`, async () => {
      let ran = 0;
      const express = express5();
      express.set('env', 'test'); // its final handler prints errors otherwise
      express.use(expressLimit({ limit: 2, period: '1m', key: key as () => string }));
      express.get('/', (_req, res) => void res.send(String(++ran)));
      const koa = new Koa();
      koa.silent = true;
      koa.use(koaLimit({ limit: 2, period: '1m', key: key as () => string }));
      koa.use((ctx) => {
        ctx.body = String(++ran);
      });
      for (const app of [express, koa.callback()])
        await withServer(createServer(app), async (url) => {
          for (let i = 0; i < 3; i++) assert.equal((await fetch(url)).status, 500);
        });
      const fastify = Fastify();
      await fastify.register(fastifyLimit({ limit: 2, period: '1m', key: key as () => string }));
      fastify.get('/', async () => String(++ran));
      try {
        for (let i = 0; i < 3; i++) assert.equal((await fastify.inject('/')).statusCode, 500);
      } finally {
        await fastify.close();
      }
      assert.equal(ran, 0);
    });
  }
});
