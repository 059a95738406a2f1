/**
 * What a real deployment gets right by default, over real HTTP: warnings about a proxy nobody trusts
 * (once per process), two middlewares on one real Redis store, counting by response, the decision on
 * the request, and stacked middlewares whose headers list every policy (read with the RFC 9651 parser
 * of these tests).
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import Koa from 'koa';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { rateLimit as expressLimit } from '../../src/adapters/express.js';
import { rateLimit as fastifyLimit } from '../../src/adapters/fastify.js';
import { rateLimit as honoLimit } from '../../src/adapters/hono.js';
import { rateLimit as koaLimit } from '../../src/adapters/koa.js';
import { type LimitedRequest, rateLimit as nodeLimit } from '../../src/adapters/node.js';
import { createManualClock } from '../../src/core/clock.js';
import { isSluiceError } from '../../src/core/errors.js';
import type { RateLimitInfo } from '../../src/http/index.js';
import { createRedisStore } from '../../src/stores/redis/index.js';
import { HARNESSES, holdRequests } from './harness.js';
import { readHeaderLists, T0 } from './suite.js';

/** Listens on loopback, port 0; closes every connection on close. */
async function listen(server: Server): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** The codes of the process warnings emitted while `body` runs (and a tick after). */
async function warningsDuring(body: () => Promise<void>): Promise<{ code: string; message: string }[]> {
  const seen: { code: string; message: string }[] = [];
  const onWarning = (w: Error & { code?: string }) => {
    if (w.code?.startsWith('SLUICE_')) seen.push({ code: w.code, message: w.message });
  };
  process.on('warning', onWarning);
  try {
    await body();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', onWarning);
  }
  return seen;
}

describe('proxy warnings, once per process, with the fix', () => {
  it('a forwarding header from a peer nobody trusts', async () => {
    const app = express();
    app.use(expressLimit({ limit: 100, period: '1m' }));
    app.get('/', (_req, res) => void res.send('ok'));
    const running = await listen(createServer(app));
    try {
      const seen = await warningsDuring(async () => {
        for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
          const res = await fetch(running.url, { headers: { 'x-forwarded-for': client } });
          await res.text();
          assert.equal(
            res.headers.get('x-ratelimit-remaining'),
            String(100 - ['203.0.113.1', '203.0.113.2', '203.0.113.3'].indexOf(client) - 1),
            'one shared key: the peer',
          );
        }
      });
      const untrusted = seen.filter((w) => w.code === 'SLUICE_UNTRUSTED_FORWARDED_HEADER');
      assert.equal(untrusted.length, 1, 'once, not per request');
      assert.match(untrusted[0]?.message ?? '', /trustProxy: \['127\.0\.0\.1'\].*trust proxy/);
    } finally {
      await running.close();
    }
  });

  it("a framework setting that trusts every peer (Express 'trust proxy' true)", async () => {
    const app = express();
    app.set('trust proxy', true);
    app.use(expressLimit({ limit: 100, period: '1m' }));
    app.get('/', (_req, res) => void res.send('ok'));
    const running = await listen(createServer(app));
    try {
      const seen = await warningsDuring(async () => {
        for (let i = 0; i < 3; i++)
          await (await fetch(running.url, { headers: { 'x-forwarded-for': `198.51.100.${i}` } })).text();
      });
      const permissive = seen.filter((w) => w.code === 'SLUICE_PERMISSIVE_TRUST_PROXY');
      assert.equal(permissive.length, 1);
      assert.match(permissive[0]?.message ?? '', /any client can pick its own rate-limit key/);
    } finally {
      await running.close();
    }
  });
});

describe('two middlewares on one Redis store', () => {
  let redis: RedisServerHandle;
  let client: Redis;
  before(async () => {
    redis = await startRedis();
    client = new Redis(redis.port, '127.0.0.1', { lazyConnect: true });
    await client.connect();
  });
  after(async () => {
    client?.disconnect();
    await redis?.stop();
  });

  it('the same policy twice is an error at construction, naming the fix', async () => {
    const store = createRedisStore({ client, clock: 'client', prefix: 'twice:', timeoutMs: 2000 });
    try {
      expressLimit({ store, limit: 5, period: '1m' });
      assert.throws(
        () => expressLimit({ store, limit: 5, period: '1m' }),
        (e: unknown) =>
          isSluiceError(e, 'ERR_SLUICE_SHARED_COUNTERS') &&
          /name: 'api'/.test(e.message) &&
          /shared: true/.test(e.message),
      );
    } finally {
      await store.close();
    }
  });

  // A generous command timeout: a busy CI core must not turn a slow reply into a fail-open pass.
  it('distinct names keep counters apart; shared: true shares them on purpose', async () => {
    const store = createRedisStore({ client, clock: 'client', prefix: 'apart:', timeoutMs: 2000 });
    const clock = createManualClock(T0);
    const app = express();
    app.get('/a', expressLimit({ store, clock, limit: 1, period: '1m', name: 'a' }), (_q, r) => void r.send('a'));
    app.get('/b', expressLimit({ store, clock, limit: 1, period: '1m', name: 'b' }), (_q, r) => void r.send('b'));
    app.get(
      '/c',
      expressLimit({ store, clock, limit: 1, period: '1m', name: 'cd', shared: true }),
      (_q, r) => void r.send('c'),
    );
    app.get(
      '/d',
      expressLimit({ store, clock, limit: 1, period: '1m', name: 'cd', shared: true }),
      (_q, r) => void r.send('d'),
    );
    const running = await listen(createServer(app));
    const status = async (path: string) => {
      const res = await fetch(`${running.url}${path}`);
      await res.text();
      return res.status;
    };
    try {
      assert.equal(await status('/a'), 200);
      assert.equal(await status('/b'), 200, '/b has counters of its own');
      assert.equal(await status('/a'), 429);
      assert.equal(await status('/c'), 200);
      assert.equal(await status('/d'), 429, '/c and /d share, as asked');
    } finally {
      await running.close();
      await store.close();
    }
  });
});

describe('counting by response, every adapter', () => {
  for (const harness of HARNESSES) {
    it(`${harness.name}: skipFailedRequests, skipSuccessfulRequests`, async () => {
      const statuses = async (url: string, path: string, n: number) => {
        const out: number[] = [];
        for (let i = 0; i < n; i++) {
          const res = await fetch(`${url}${path}`);
          await res.text();
          out.push(res.status);
        }
        return out;
      };
      const failed = await harness.start({
        limit: 2,
        period: '1m',
        clock: createManualClock(T0),
        skipFailedRequests: true,
      });
      try {
        assert.deepEqual(await statuses(failed.url, '/missing', 4), [404, 404, 404, 404], '404s do not count');
        assert.deepEqual(await statuses(failed.url, '/', 3), [200, 200, 429]);
      } finally {
        await failed.close();
      }
      const ok = await harness.start({
        limit: 2,
        period: '1m',
        clock: createManualClock(T0),
        skipSuccessfulRequests: true,
      });
      try {
        assert.deepEqual(await statuses(ok.url, '/', 4), [200, 200, 200, 200], 'successes do not count');
        assert.deepEqual(await statuses(ok.url, '/missing', 3), [404, 404, 429], 'only failures do');
      } finally {
        await ok.close();
      }
    });
  }

  it('responseCost: the real cost, known after the response, is taken or given back', async () => {
    const units = new WeakMap<IncomingMessage, number>();
    const limited = nodeLimit({
      limit: 10,
      period: '1m',
      clock: createManualClock(T0),
      responseCost: (req) => units.get(req) ?? 1,
    });
    const running = await listen(
      createServer(
        limited((req, res) => {
          units.set(req, Number(new URL(req.url ?? '/', 'http://x').searchParams.get('units') ?? 1));
          res.end('ok');
        }),
      ),
    );
    const remaining = async (units: number) => {
      const res = await fetch(`${running.url}/?units=${units}`);
      await res.text();
      return Number(res.headers.get('x-ratelimit-remaining'));
    };
    try {
      assert.equal(await remaining(4), 9, 'a request takes 1 up front');
      assert.equal(await remaining(0), 5, 'then 3 more once it turned out to cost 4');
      assert.equal(await remaining(1), 5, 'the free one was given back');
    } finally {
      await running.close();
    }
  });
});

describe('resetKey, penalty and block on the middleware, every adapter', () => {
  for (const harness of HARNESSES) {
    it(harness.name, async () => {
      const clock = createManualClock(T0);
      const running = await harness.start({ limit: 3, period: '1m', clock, name: 'per-ip' });
      const controls = running.controls;
      assert.ok(controls !== undefined);
      const get = async () => {
        const res = await fetch(running.url);
        await res.text();
        return {
          status: res.status,
          remaining: res.headers.get('x-ratelimit-remaining'),
          retry: res.headers.get('retry-after'),
        };
      };
      try {
        assert.equal((await get()).remaining, '2');
        await controls.penalty('127.0.0.1', 1);
        assert.equal((await get()).remaining, '0', 'the penalty took one more');
        assert.equal((await get()).status, 429);
        await controls.resetKey('127.0.0.1');
        assert.equal((await get()).remaining, '2', 'reset: a fresh quota');
        await controls.block('127.0.0.1', '10m');
        const blocked = await get();
        assert.equal(blocked.status, 429);
        assert.equal(blocked.retry, '600', 'blocked for ten minutes');
        clock.advance(60_000);
        assert.equal((await get()).status, 429, 'still blocked after the window refilled');
        clock.advance(540_000);
        assert.equal((await get()).status, 200, 'the block is over');
        await controls.penalty('127.0.0.1', 99);
        assert.equal((await get()).status, 429, 'a penalty larger than the quota takes what is left');
      } finally {
        await running.close();
      }
    });
  }
});

describe('a concurrency (in-flight) limit in the middleware, every adapter', () => {
  for (const harness of HARNESSES) {
    it(harness.name, async () => {
      const running = await harness.start({ limit: 10, period: '1m', clock: createManualClock(T0), concurrency: 1 });
      const get = async (path = '/') => {
        const res = await fetch(`${running.url}${path}`);
        return { status: res.status, headers: res.headers, body: await res.text() };
      };
      const hold = holdRequests();
      const first = get('/hold');
      try {
        await hold.arrived;
        const second = await get();
        assert.equal(second.status, 429, 'one request of this client is already in flight');
        assert.equal(
          second.headers.get('ratelimit-policy'),
          '"default";q=10;w=60, "inflight";q=1;qu="concurrent-requests"',
        );
        assert.equal(second.headers.get('ratelimit'), '"default";r=8;t=60, "inflight";r=0');
        readHeaderLists(second);
        hold.open();
        const done = await first;
        assert.equal(done.status, 200);
        assert.equal(done.headers.get('ratelimit'), '"default";r=9;t=60, "inflight";r=0');
        const third = await get();
        assert.equal(third.status, 200, 'the place was given back when the first response was sent');
        assert.equal(
          third.headers.get('ratelimit'),
          '"default";r=8;t=60, "inflight";r=0',
          'the rejected one took nothing',
        );
      } finally {
        hold.open();
        await first.catch(() => undefined);
        await running.close();
      }
    });
  }
});

describe('stacked middlewares list every policy; the decision is on the request', () => {
  /** Two sluice middlewares in a row: per-ip 5/min, then per-user 2/s keyed by x-user. */
  const outer = { name: 'per-ip', limit: 5, period: '1m' } as const;
  const inner = {
    name: 'per-user',
    limit: 2,
    period: '1s',
    key: (_r: unknown, info: { header(n: string): string | undefined }) => info.header('x-user') ?? null,
  };

  type App = {
    name: string;
    start(clock: ReturnType<typeof createManualClock>): Promise<{ url: string; close(): Promise<void> }>;
  };
  const describeInfo = (info: RateLimitInfo | undefined | null) =>
    JSON.stringify({ binding: info?.name, limits: info?.limits.map((l) => l.name), remaining: info?.remaining });

  const apps: App[] = [
    {
      name: 'express',
      start(clock) {
        const app = express();
        app.use(expressLimit({ ...outer, clock }), expressLimit({ ...inner, clock }));
        app.get('/', (req, res) => void res.send(describeInfo(req.rateLimit)));
        return listen(createServer(app));
      },
    },
    {
      name: 'fastify',
      async start(clock) {
        const app = Fastify();
        await app.register(fastifyLimit({ ...outer, clock }));
        await app.register(fastifyLimit({ ...inner, clock }));
        app.get('/', async (request) => describeInfo(request.rateLimit));
        await app.listen({ port: 0, host: '127.0.0.1' });
        const { port } = app.server.address() as AddressInfo;
        return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
      },
    },
    {
      name: 'koa',
      start(clock) {
        const app = new Koa();
        app.use(koaLimit({ ...outer, clock }));
        app.use(koaLimit({ ...inner, clock }));
        app.use((ctx) => {
          ctx.body = describeInfo(ctx.state.rateLimit as RateLimitInfo);
        });
        return listen(createServer(app.callback()));
      },
    },
    {
      name: 'hono',
      start(clock) {
        const app = new Hono();
        app.use(honoLimit({ ...outer, clock }), honoLimit({ ...inner, clock }));
        app.get('/', (c) => c.text(describeInfo(c.get('rateLimit'))));
        return new Promise((resolve) => {
          const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
            resolve({
              url: `http://127.0.0.1:${info.port}`,
              close: () =>
                new Promise<void>((done) => {
                  (server as Server).closeAllConnections();
                  server.close(() => done());
                }),
            });
          });
        });
      },
    },
    {
      name: 'node:http',
      start(clock) {
        const wrap = (l: (req: IncomingMessage, res: import('node:http').ServerResponse) => unknown) =>
          nodeLimit({ ...outer, clock })(nodeLimit({ ...inner, clock })(l));
        return listen(createServer(wrap((req, res) => res.end(describeInfo((req as LimitedRequest).rateLimit)))));
      },
    },
  ];

  for (const app of apps) {
    it(app.name, async () => {
      const running = await app.start(createManualClock(T0));
      const get = async (headers: Record<string, string> = {}) => {
        const res = await fetch(running.url, { headers });
        return { status: res.status, headers: res.headers, body: await res.text() };
      };
      try {
        const user = { 'x-user': 'u1' };
        const first = await get(user);
        assert.equal(first.status, 200);
        assert.deepEqual(readHeaderLists(first), [
          { name: 'per-ip', q: 5, w: 60, r: 4, t: 60 },
          { name: 'per-user', q: 2, w: 1, r: 1, t: 1 },
        ]);
        assert.equal(first.headers.get('x-ratelimit-limit'), '2', 'X-RateLimit-* describe the closest to exhaustion');
        assert.deepEqual(JSON.parse(first.body), { binding: 'per-user', limits: ['per-ip', 'per-user'], remaining: 1 });
        await get(user);
        const third = await get(user);
        assert.equal(third.status, 429);
        assert.deepEqual(
          readHeaderLists(third).map((p) => [p.name, p.r]),
          [
            ['per-ip', 3],
            ['per-user', 0],
          ],
          'per-user rejected the request, so per-ip gave back what it took for it',
        );
        assert.equal(third.headers.get('retry-after'), '1');
      } finally {
        await running.close();
      }
    });
  }
});
