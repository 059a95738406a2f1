/**
 * Fastify's per-route settings (`config.rateLimit`), 404s, and a plugin registered after routes.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { rateLimit } from '../../src/adapters/fastify.js';
import { createManualClock } from '../../src/core/clock.js';
import { T0 } from './suite.js';

type Send = (path: string) => Promise<Response>;

async function serve(app: FastifyInstance, body: (get: Send, post: Send) => Promise<void>) {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  try {
    await body(
      (path) => fetch(`http://127.0.0.1:${port}${path}`),
      (path) => fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST' }),
    );
  } finally {
    app.server.closeAllConnections();
    await app.close();
  }
}

describe('fastify plugin', () => {
  it('per-route config: its own limit on top of the global one, off, or the global counters at another cost', async () => {
    const app = Fastify();
    await app.register(rateLimit({ limit: 3, period: '1m', clock: createManualClock(T0) }));
    app.get('/', async () => 'ok');
    app.get('/login', { config: { rateLimit: { limit: 1, period: '10s' } } }, async () => 'ok');
    app.get('/free', { config: { rateLimit: false } }, async () => 'ok');
    app.get('/heavy', { config: { rateLimit: { cost: 2 } } }, async () => 'ok');
    await serve(app, async (get) => {
      const login = await get('/login');
      assert.equal(login.status, 200);
      assert.equal(
        login.headers.get('ratelimit-policy'),
        '"GET /login";q=1;w=10, "default";q=3;w=60',
        'the route limit adds to the global one; both are listed',
      );
      assert.equal(login.headers.get('ratelimit'), '"GET /login";r=0;t=10, "default";r=2;t=60');
      assert.equal((await get('/login')).status, 429, 'the route has its own, smaller limit');
      for (let i = 0; i < 5; i++) {
        const free = await get('/free');
        assert.equal(free.status, 200);
        assert.equal(free.headers.get('ratelimit'), null);
      }
      const heavy = await get('/heavy');
      assert.equal(
        heavy.headers.get('ratelimit'),
        '"default";r=0;t=60',
        'cost 2 from the global 3, of which the first login took 1 (the rejected one took none)',
      );
      assert.equal((await get('/')).status, 429, 'same counters as the route');
      const missing = await get('/missing');
      assert.equal(missing.status, 429, 'a 404 counts too: scanners are limited');
    });
  });

  it("a request the plugin's limit rejects takes nothing from the route's own limit", async () => {
    const clock = createManualClock(T0);
    const app = Fastify();
    await app.register(rateLimit({ limit: 2, period: '1m', clock }));
    app.get('/', async () => 'ok');
    app.post('/login', { config: { rateLimit: { limit: 3, period: '1h' } } }, async () => 'ok');
    await serve(app, async (get, post) => {
      assert.equal((await get('/')).status, 200);
      assert.equal((await get('/')).status, 200);
      for (let i = 0; i < 3; i++) {
        const login = await post('/login');
        assert.equal(login.status, 429, 'the global limit is used up');
        assert.match(
          login.headers.get('ratelimit') ?? '',
          /^"POST \/login";r=3;t=\d+, "default";r=0;t=60$/,
          "the route's limit is untouched by the rejected request (all 3 left)",
        );
      }
      clock.advance(60_000);
      const login = await post('/login');
      assert.equal(login.status, 200, 'once the global window resets, the route is not locked out');
      assert.equal(login.headers.get('ratelimit'), '"POST /login";r=2;t=2700, "default";r=1;t=60');
    });
  });

  it('global: false limits only the routes that ask for it (as @fastify/rate-limit)', async () => {
    const app = Fastify();
    await app.register(rateLimit({ global: false, limit: 2, period: '1m', clock: createManualClock(T0) }));
    app.get('/', async () => 'ok');
    app.get('/limited', { config: { rateLimit: {} } }, async () => 'ok');
    app.get('/tight', { config: { rateLimit: { limit: 1, period: '10s' } } }, async () => 'ok');
    await serve(app, async (get) => {
      for (let i = 0; i < 5; i++) {
        const free = await get('/');
        assert.equal(free.status, 200, 'a route without config.rateLimit is not limited');
        assert.equal(free.headers.get('ratelimit'), null);
      }
      assert.equal((await get('/missing')).status, 404, 'nor is a 404');
      const limited = await get('/limited');
      assert.equal(
        limited.headers.get('ratelimit'),
        '"default";r=1;t=60',
        "config.rateLimit: {} takes the plugin's limit",
      );
      assert.equal((await get('/limited')).status, 200);
      assert.equal((await get('/limited')).status, 429);
      const tight = await get('/tight');
      assert.equal(tight.status, 200);
      assert.equal(
        tight.headers.get('ratelimit'),
        '"GET /tight";r=0;t=10',
        "a route's own limit stands alone: there is no global limit to add it to",
      );
      assert.equal((await get('/tight')).status, 429);
    });
  });

  it("the rate-limit headers are the reply's own: a handler reads them, and a later hook can change them", async () => {
    const app = Fastify();
    await app.register(rateLimit({ limit: 3, period: '1m', clock: createManualClock(T0) }));
    app.addHook('onSend', async (_request, reply) => {
      reply.header('X-RateLimit-Limit', 'changed');
    });
    app.get('/', async (_request, reply) => ({
      seen: reply.getHeader('ratelimit'),
      has: reply.hasHeader('X-RateLimit-Remaining'),
    }));
    await serve(app, async (get) => {
      const res = await get('/');
      assert.deepEqual(await res.json(), { seen: '"default";r=2;t=60', has: true });
      assert.equal(res.headers.get('x-ratelimit-limit'), 'changed');
      assert.equal(res.headers.get('x-ratelimit-remaining'), '2');
    });
  });

  it('replaceGlobal: the route limit instead of the global one', async () => {
    const app = Fastify();
    await app.register(rateLimit({ limit: 1, period: '1m', clock: createManualClock(T0) }));
    app.post('/hook', { config: { rateLimit: { limit: 3, period: '1m', replaceGlobal: true } } }, async () => 'ok');
    await serve(app, async () => {
      const { port } = app.server.address() as AddressInfo;
      const post = () => fetch(`http://127.0.0.1:${port}/hook`, { method: 'POST' });
      const first = await post();
      assert.equal(first.headers.get('ratelimit-policy'), '"POST /hook";q=3;w=60');
      assert.deepEqual(
        [200, (await post()).status, (await post()).status, (await post()).status],
        [200, 200, 200, 429],
      );
    });
  });

  it('a plugin registered without await still applies every route setting', async () => {
    const app = Fastify();
    void app.register(rateLimit({ limit: 100, period: '1m', clock: createManualClock(T0) }));
    app.get('/login', { config: { rateLimit: { limit: 1, period: '1m' } } }, async () => 'ok');
    app.get('/health', { config: { rateLimit: false } }, async () => 'ok');
    await serve(app, async (get) => {
      assert.equal((await get('/login')).status, 200);
      assert.equal((await get('/login')).status, 429, 'the 1/min login limit, not the 100/min global one');
      const health = await get('/health');
      assert.equal(health.status, 200);
      assert.equal(health.headers.get('ratelimit'), null);
    });
  });

  it('a route with its own key: a keyless client still meets the global per-IP limit', async () => {
    const app = Fastify();
    await app.register(rateLimit({ limit: 2, period: '1m', clock: createManualClock(T0) }));
    app.get(
      '/search',
      {
        config: {
          rateLimit: {
            limit: 10,
            period: '1m',
            key: (req) => req.headers['x-api-key'] as string | undefined,
            missingKey: 'skip',
          },
        },
      },
      async () => 'ok',
    );
    await serve(app, async (get) => {
      assert.deepEqual(
        [(await get('/search')).status, (await get('/search')).status, (await get('/search')).status],
        [200, 200, 429],
      );
    });
  });

  it('covers routes declared before the plugin, and awaits async options', async () => {
    const app = Fastify();
    app.get('/early', async () => 'ok');
    await app.register(
      rateLimit({ limit: 1, period: '1m', clock: createManualClock(T0), key: async (req) => `k:${req.method}` }),
    );
    await serve(app, async (get) => {
      assert.equal((await get('/early')).status, 200);
      assert.equal((await get('/early')).status, 429);
    });
  });

  it('a custom handler answers the rejection', async () => {
    const app = Fastify();
    await app.register(
      rateLimit({
        limit: 1,
        period: '1m',
        clock: createManualClock(T0),
        handler: (_req, reply, rejection) => {
          reply.code(418).send({ tea: rejection.retryAfter });
        },
      }),
    );
    app.get('/', async () => 'ok');
    await serve(app, async (get) => {
      await get('/');
      const r = await get('/');
      assert.equal(r.status, 418);
      assert.equal(r.headers.get('retry-after'), '60');
      assert.deepEqual(await r.json(), { tea: 60 });
    });
  });

  it('an option that throws becomes a Fastify error (500)', async () => {
    const app = Fastify();
    await app.register(
      rateLimit({
        limit: 1,
        period: '1m',
        key: () => {
          throw new Error('no key today');
        },
      }),
    );
    app.get('/', async () => 'ok');
    await serve(app, async (get) => {
      assert.equal((await get('/')).status, 500);
    });
  });
});
