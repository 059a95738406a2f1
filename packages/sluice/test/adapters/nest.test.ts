/**
 * sluice/nest in real Nest applications over real HTTP: the Express and the Fastify platform (module
 * limits, several named limits, @RateLimit and @SkipRateLimit, headers and the 429), forRootAsync, a
 * GraphQL resolver (Apollo), a WebSocket gateway (per message), and @nestjs/throttler's own guard on
 * sluice's storage. Decorators are written as in any Nest app; nothing relies on emitDecoratorMetadata.
 */
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Controller, Get, type INestApplication, Module, Post, UseGuards } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { GraphQLModule, Query, Resolver } from '@nestjs/graphql';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { WsAdapter } from '@nestjs/platform-ws';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import WebSocket from 'ws';
import {
  createThrottlerStorage,
  RATE_LIMIT_OPTIONS,
  RateLimit,
  RateLimitGuard,
  RateLimitModule,
  SkipRateLimit,
} from '../../src/adapters/nest.js';

@Controller()
class AppController {
  @Get('limited')
  limited() {
    return { ok: true };
  }

  @Get('health')
  @SkipRateLimit()
  health() {
    return 'ok';
  }

  @Post('login')
  @RateLimit({ limit: 1, period: '1m' })
  login() {
    return { ok: true };
  }

  @Get('long-only')
  @SkipRateLimit('short')
  longOnly() {
    return { ok: true };
  }
}

@Module({
  imports: [
    RateLimitModule.forRoot({
      limits: [
        { name: 'short', limit: 3, period: '1m' },
        { name: 'long', limit: 5, period: '1h' },
      ],
    }),
  ],
  controllers: [AppController],
  providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
})
class AppModule {}

/** The policy names of `RateLimit-Policy` (`"short";q=3;w=60, "long";q=5;w=3600`). */
const policyNames = (res: Response) =>
  [...(res.headers.get('ratelimit-policy') ?? '').matchAll(/"([^"]+)"/g)].map((m) => m[1]);

async function listen(app: INestApplication): Promise<string> {
  await app.listen(0, '127.0.0.1');
  return (await app.getUrl()).replace('[::1]', '127.0.0.1');
}

for (const platform of ['express', 'fastify'] as const) {
  describe(`sluice/nest on the ${platform} platform`, { timeout: 60_000 }, () => {
    let app: INestApplication;
    let base: string;
    before(async () => {
      app =
        platform === 'express'
          ? await NestFactory.create(AppModule, { logger: false })
          : await NestFactory.create(AppModule, new FastifyAdapter(), { logger: false });
      base = await listen(app);
    });
    after(() => app.close());

    it('limits by the module limits, with headers on every response and the same 429 as every adapter', async () => {
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 4; i++) {
        last = await fetch(`${base}/limited`);
        statuses.push(last.status);
        if (i === 0) {
          assert.equal(last.headers.get('x-ratelimit-limit'), '3');
          assert.equal(last.headers.get('x-ratelimit-remaining'), '2');
          // The limit closest to exhaustion describes the request (short: 3 per minute).
          assert.ok(policyNames(last).includes('short'), String(policyNames(last)));
        }
        if (i < 3) await last.arrayBuffer();
      }
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      const res = last as Response;
      assert.match(res.headers.get('content-type') ?? '', /application\/json/);
      assert.ok(Number(res.headers.get('retry-after')) > 0);
      assert.equal(res.headers.get('x-ratelimit-remaining'), '0');
      const body = (await res.json()) as { error: { code: string; message: string; retry_after: number } };
      assert.equal(body.error.code, 'RATE_LIMIT_EXCEEDED');
      assert.equal(body.error.retry_after, Number(res.headers.get('retry-after')));
    });

    it('@SkipRateLimit() exempts a route: no counting, no headers', async () => {
      for (let i = 0; i < 6; i++) {
        const res = await fetch(`${base}/health`);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('x-ratelimit-limit'), null);
        await res.arrayBuffer();
      }
    });

    it("@SkipRateLimit('short') leaves the other named limit, whose counter is the module's", async () => {
      // /limited took 3 of `long` already: 2 left before it rejects.
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${base}/long-only`);
        statuses.push(res.status);
        if (i === 0) {
          assert.equal(res.headers.get('x-ratelimit-limit'), '5');
          assert.ok(policyNames(res).includes('long') && !policyNames(res).includes('short'));
        }
        await res.arrayBuffer();
      }
      assert.deepEqual(statuses, [200, 200, 429]);
    });

    it('@RateLimit(...) gives a route its own limit and counter', async () => {
      const first = await fetch(`${base}/login`, { method: 'POST' });
      assert.equal(first.status, 201);
      assert.equal(first.headers.get('x-ratelimit-limit'), '1');
      const second = await fetch(`${base}/login`, { method: 'POST' });
      assert.equal(second.status, 429);
      assert.equal(((await second.json()) as { error: { code: string } }).error.code, 'RATE_LIMIT_EXCEEDED');
    });
  });
}

// Behind a proxy: the platform's own trust setting keys each client apart (as the Express and Fastify
// adapters do), and sluice's own trustProxy wins over it.
@Module({
  imports: [RateLimitModule.forRoot({ algorithm: 'token-bucket', limit: 1, period: '1h' })],
  controllers: [AppController],
  providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
})
class ProxiedModule {}

@Module({
  imports: [RateLimitModule.forRoot({ algorithm: 'token-bucket', limit: 1, period: '1h', trustProxy: false })],
  controllers: [AppController],
  providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
})
class UntrustingModule {}

for (const platform of ['express', 'fastify'] as const) {
  describe(`sluice/nest behind a proxy on the ${platform} platform`, { timeout: 60_000 }, () => {
    async function start(module: typeof ProxiedModule): Promise<{ app: INestApplication; base: string }> {
      let app: INestApplication;
      if (platform === 'express') {
        app = await NestFactory.create(module, { logger: false });
        (app.getHttpAdapter().getInstance() as { set(name: string, value: unknown): void }).set(
          'trust proxy',
          'loopback',
        );
      } else {
        app = await NestFactory.create(module, new FastifyAdapter({ trustProxy: '127.0.0.1' }), { logger: false });
      }
      return { app, base: await listen(app) };
    }
    const from = (base: string, client: string) =>
      fetch(`${base}/limited`, { headers: { 'x-forwarded-for': client } }).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      });

    it("the platform's trust setting tells the clients behind the proxy apart", async () => {
      const { app, base } = await start(ProxiedModule);
      try {
        assert.equal(await from(base, '203.0.113.1'), 200);
        assert.equal(await from(base, '203.0.113.2'), 200, 'another client: its own limit');
        assert.equal(await from(base, '203.0.113.1'), 429, 'the first client again: over its limit');
      } finally {
        await app.close();
      }
    });

    it("sluice's own trustProxy wins over the platform's", async () => {
      const { app, base } = await start(UntrustingModule);
      try {
        assert.equal(await from(base, '203.0.113.1'), 200);
        assert.equal(await from(base, '203.0.113.2'), 429, 'both are the proxy');
      } finally {
        await app.close();
      }
    });
  });
}

describe('RateLimitModule.forRootAsync', { timeout: 60_000 }, () => {
  it('builds the options from injected providers', async () => {
    const LIMIT = Symbol('limit');
    @Module({ providers: [{ provide: LIMIT, useValue: 2 }], exports: [LIMIT] })
    class ConfigModule {}
    @Module({
      imports: [
        RateLimitModule.forRootAsync({
          imports: [ConfigModule],
          inject: [LIMIT],
          useFactory: async (limit: number) => ({ limit, period: '1m' }),
        }),
      ],
      controllers: [AppController],
      providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
    })
    class AsyncModule {}
    const app = await NestFactory.create(AsyncModule, { logger: false });
    try {
      const base = await listen(app);
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(`${base}/limited`)).status);
      assert.deepEqual(statuses, [200, 200, 429]);
      assert.deepEqual(app.get(RATE_LIMIT_OPTIONS), { limit: 2, period: '1m' });
    } finally {
      await app.close();
    }
  });

  it('a bad option fails at startup with its code', async () => {
    @Module({ imports: [RateLimitModule.forRoot({ limit: -1, period: '1m' })] })
    class BadModule {}
    await assert.rejects(NestFactory.create(BadModule, { logger: false, abortOnError: false }), /ERR_SLUICE|limit/);
  });
});

@Resolver()
class HelloResolver {
  @Query('hello')
  @RateLimit({ limit: 2, period: '1m' })
  hello() {
    return 'world';
  }

  @Query('free')
  @SkipRateLimit()
  free() {
    return 'free';
  }
}

describe('sluice/nest in a GraphQL resolver (Apollo on Express)', { timeout: 60_000 }, () => {
  let app: INestApplication;
  let base: string;
  before(async () => {
    @Module({
      imports: [
        RateLimitModule.forRoot({ limit: 100, period: '1m' }),
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          typeDefs: 'type Query { hello: String, free: String }',
          playground: false,
          context: ({ req, res }: { req: unknown; res: unknown }) => ({ req, res }),
        }),
      ],
      providers: [HelloResolver, { provide: APP_GUARD, useClass: RateLimitGuard }],
    })
    class GqlModule {}
    app = await NestFactory.create(GqlModule, { logger: false });
    base = await listen(app);
  });
  after(() => app.close());

  const query = (q: string) =>
    fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: q }),
    });

  it('limits a resolver per request, with headers, and answers over the limit with a 429 error', async () => {
    const first = await query('{ hello }');
    assert.deepEqual(await first.json(), { data: { hello: 'world' } });
    assert.equal(first.headers.get('x-ratelimit-limit'), '2');
    await (await query('{ hello }')).arrayBuffer();
    // GraphQL over HTTP answers errors with 200; the rejection is in the error and the headers.
    const over = await query('{ hello }');
    assert.ok(Number(over.headers.get('retry-after')) > 0);
    assert.equal(over.headers.get('x-ratelimit-remaining'), '0');
    const third = (await over.json()) as { errors: { message: string; extensions: Record<string, unknown> }[] };
    assert.equal(third.errors.length, 1);
    assert.equal(third.errors[0]?.extensions.code, 'RATE_LIMIT_EXCEEDED');
    assert.equal(third.errors[0]?.extensions.status, 429);
    assert.ok(Number(third.errors[0]?.extensions.retry_after) > 0);
    assert.match(third.errors[0]?.message ?? '', /Too many requests/);
    const free = await query('{ free }');
    assert.deepEqual(await free.json(), { data: { free: 'free' } });
  });
});

// Nest applies APP_GUARD to HTTP and GraphQL; a gateway names its guards.
@WebSocketGateway()
@UseGuards(RateLimitGuard)
class PingGateway {
  @SubscribeMessage('ping')
  @RateLimit({ limit: 2, period: '1m' })
  ping() {
    return { event: 'pong', data: 'ok' };
  }

  @SubscribeMessage('free')
  @SkipRateLimit()
  free() {
    return { event: 'free', data: 'ok' };
  }
}

describe('sluice/nest in a WebSocket gateway (ws), per message', { timeout: 60_000 }, () => {
  it('admits the limit of messages per client, answers the rest with an exception event, and skips', async () => {
    @Module({
      imports: [RateLimitModule.forRoot({ limit: 100, period: '1m' })],
      providers: [PingGateway],
    })
    class WsModule {}
    const app = await NestFactory.create(WsModule, { logger: false });
    app.useWebSocketAdapter(new WsAdapter(app));
    try {
      const base = await listen(app);
      const ws = new WebSocket(base.replace('http', 'ws'));
      await new Promise((done, fail) => {
        ws.once('open', done);
        ws.once('error', fail);
      });
      const received: { event: string; data: unknown }[] = [];
      ws.on('message', (m) => received.push(JSON.parse(m.toString()) as { event: string; data: unknown }));
      for (let i = 0; i < 3; i++) ws.send(JSON.stringify({ event: 'ping' }));
      for (let i = 0; i < 3; i++) ws.send(JSON.stringify({ event: 'free' }));
      const deadline = Date.now() + 10_000;
      while (received.length < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      ws.close();
      const events = received.map((r) => r.event);
      assert.equal(events.filter((e) => e === 'pong').length, 2, JSON.stringify(received));
      assert.equal(events.filter((e) => e === 'free').length, 3);
      const exception = received.find((r) => r.event === 'exception');
      assert.ok(exception, JSON.stringify(received));
      assert.equal((exception.data as { code: string }).code, 'RATE_LIMIT_EXCEEDED');
      assert.ok((exception.data as { retry_after: number }).retry_after > 0);
    } finally {
      await app.close();
    }
  });
});

@Controller()
class ThrottledController {
  @Get('t')
  t() {
    return { ok: true };
  }
}

describe("@nestjs/throttler's own guard on sluice's storage", { timeout: 60_000 }, () => {
  it('switches stores in one line: limits, headers and 429 come from throttler, counting from sluice', async () => {
    @Module({
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [{ ttl: 60_000, limit: 2 }],
          storage: createThrottlerStorage(),
        }),
      ],
      controllers: [ThrottledController],
      providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
    })
    class ThrottledModule {}
    const app = await NestFactory.create(ThrottledModule, { logger: false });
    try {
      const base = await listen(app);
      const answers = [];
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${base}/t`);
        answers.push([res.status, res.headers.get('x-ratelimit-remaining'), res.headers.get('retry-after')]);
        await res.arrayBuffer();
      }
      assert.equal(answers[0]?.[0], 200);
      assert.equal(answers[0]?.[1], '1');
      assert.equal(answers[1]?.[0], 200);
      assert.equal(answers[1]?.[1], '0');
      assert.equal(answers[2]?.[0], 429);
      assert.ok(Number(answers[2]?.[2]) > 0);
      assert.equal(answers[3]?.[0], 429);
    } finally {
      await app.close();
    }
  });
});
