/**
 * One way to start a server per adapter, all serving the same routes (`GET /`, `/health`, `/other`,
 * answering 200 `ok`) behind `rateLimit(options)`, on 127.0.0.1 and port 0.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express5 from 'express';
import express4 from 'express4';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { type ExpressRateLimitOptions, rateLimit as expressLimit } from '../../src/adapters/express.js';
import { type FastifyRateLimitOptions, rateLimit as fastifyLimit } from '../../src/adapters/fastify.js';
import { type HonoRateLimitOptions, rateLimit as honoLimit } from '../../src/adapters/hono.js';
import { type KoaRateLimitOptions, rateLimit as koaLimit } from '../../src/adapters/koa.js';
import { type NodeRateLimitOptions, rateLimit as nodeLimit } from '../../src/adapters/node.js';
import type { RateLimitControls, RateLimitOptions } from '../../src/http/index.js';

/** A running server. */
export interface Running {
  /** `http://127.0.0.1:<port>` */
  url: string;
  close(): Promise<void>;
  /** The middleware's resetKey, penalty and block. */
  controls?: RateLimitControls;
}

/**
 * The framework's own proxy setting, in its own terms: Express `app.set('trust proxy', value)`,
 * Fastify `Fastify({ trustProxy: value })`, Koa `app.proxy = true` (with `app.maxIpsCount = value`
 * when it is a number).
 */
export interface FrameworkSetup {
  trustProxy?: boolean | number | string;
}

/** Starts a server of one framework with the middleware built from framework-neutral options. */
export interface AdapterHarness {
  readonly name: string;
  /** True when the framework has a trust-proxy setting of its own. */
  readonly hasTrustSetting: boolean;
  /** Several options: one middleware each, stacked in that order (controls are the first's). */
  start(options: RateLimitOptions<unknown> | Stack, setup?: FrameworkSetup): Promise<Running>;
}

/** Options of middlewares stacked on one app, in the order they run. */
export type Stack = readonly RateLimitOptions<unknown>[];

/** The options of each middleware, in order, built with `create`. */
function stacked<T>(options: RateLimitOptions<unknown> | Stack, create: (o: never) => T): [T, ...T[]] {
  const list = Array.isArray(options) ? options : [options];
  return list.map((o) => create(o as never)) as [T, ...T[]];
}

const PATHS = ['/', '/health', '/other'];

let gate: Promise<void> = Promise.resolve();
let arrive: () => void = () => {};

/**
 * Makes requests to `/hold` wait in their handler until `open()` is called; `arrived` resolves when one
 * has reached its handler (so it is in flight, past the middleware).
 */
export function holdRequests(): { open(): void; arrived: Promise<void> } {
  let open: () => void = () => {};
  gate = new Promise((resolve) => {
    open = resolve;
  });
  const arrived = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  return { open, arrived };
}

function held(): Promise<void> {
  arrive();
  return gate;
}

async function withControls(running: Promise<Running>, controls: RateLimitControls): Promise<Running> {
  return { ...(await running), controls };
}

/** Listens on a free loopback port; `close` ends open connections too. */
export function listen(server: Server): Promise<Running> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

function expressHarness(name: string, create: typeof express5): AdapterHarness {
  return {
    name,
    hasTrustSetting: true,
    start(options, setup = {}) {
      const app = create();
      if (setup.trustProxy !== undefined) app.set('trust proxy', setup.trustProxy);
      const limiters = stacked(options, (o: ExpressRateLimitOptions) => expressLimit(o));
      for (const l of limiters) app.use(l);
      for (const path of PATHS) app.get(path, (_req, res) => void res.send('ok'));
      app.get('/hold', (_req, res) => void held().then(() => res.send('ok')));
      return withControls(listen(createServer(app)), limiters[0]);
    },
  };
}

export const express5Harness = expressHarness('express 5', express5);
export const express4Harness = expressHarness('express 4', express4);

export const fastifyHarness: AdapterHarness = {
  name: 'fastify',
  hasTrustSetting: true,
  async start(options, setup = {}) {
    const app = Fastify(setup.trustProxy === undefined ? {} : { trustProxy: setup.trustProxy });
    const limiters = stacked(options, (o: FastifyRateLimitOptions) => fastifyLimit(o));
    for (const l of limiters) await app.register(l);
    for (const path of PATHS) app.get(path, async () => 'ok');
    app.get('/hold', async () => {
      await held();
      return 'ok';
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      close: async () => {
        app.server.closeAllConnections();
        await app.close();
      },
      controls: limiters[0],
    };
  },
};

export const koaHarness: AdapterHarness = {
  name: 'koa',
  hasTrustSetting: true,
  start(options, setup = {}) {
    const app = new Koa();
    if (setup.trustProxy !== undefined && setup.trustProxy !== false) {
      app.proxy = true;
      if (typeof setup.trustProxy === 'number') app.maxIpsCount = setup.trustProxy;
    }
    const limiters = stacked(options, (o: KoaRateLimitOptions) => koaLimit(o));
    for (const l of limiters) app.use(l);
    app.use(async (ctx) => {
      if (ctx.path === '/hold') await held();
      if (PATHS.includes(ctx.path) || ctx.path === '/hold') ctx.body = 'ok';
    });
    return withControls(listen(createServer(app.callback())), limiters[0]);
  },
};

export const honoHarness: AdapterHarness = {
  name: 'hono',
  hasTrustSetting: false,
  start(options) {
    const app = new Hono();
    const limiters = stacked(options, (o: HonoRateLimitOptions) => honoLimit(o));
    for (const l of limiters) app.use(l);
    for (const path of PATHS) app.get(path, (c) => c.text('ok'));
    app.get('/hold', async (c) => {
      await held();
      return c.text('ok');
    });
    return new Promise((resolve) => {
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
        resolve({
          url: `http://127.0.0.1:${info.port}`,
          controls: limiters[0],
          close: () =>
            new Promise<void>((done) => {
              (server as Server).closeAllConnections();
              server.close(() => done());
            }),
        });
      });
    });
  },
};

export const nodeHarness: AdapterHarness = {
  name: 'node:http',
  hasTrustSetting: false,
  start(options) {
    const wraps = stacked(options, (o: NodeRateLimitOptions) => nodeLimit(o));
    const handler: Parameters<(typeof wraps)[0]>[0] = (req, res) => {
      if (req.url === '/hold') return void held().then(() => res.end('ok'));
      res.statusCode = PATHS.includes((req.url ?? '/').split('?')[0] as string) ? 200 : 404;
      res.end('ok');
    };
    // The first middleware is the outermost: it runs first.
    return withControls(listen(createServer(wraps.reduceRight((h, wrap) => wrap(h), handler))), wraps[0]);
  },
};

/** Every adapter, Express in both majors. */
export const HARNESSES: readonly AdapterHarness[] = [
  express5Harness,
  express4Harness,
  fastifyHarness,
  koaHarness,
  honoHarness,
  nodeHarness,
];

/** Waits on real I/O (not a window) until `done()` holds; fails after `ms`. */
export async function until(done: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) assert.fail(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
