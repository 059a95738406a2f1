/**
 * sluice/nest's `adaptive` option in real Nest applications (Express and Fastify platforms): one
 * limit for the whole application, shed with 503 and `Retry-After`, and every place given back on
 * success, on a handler that throws and on a client that aborts.
 */
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { RateLimit, RateLimitGuard, RateLimitModule } from '../../src/adapters/nest.js';
import { createAdaptiveLimiter } from '../../src/adaptive/create-adaptive-limiter.js';

const limiter = createAdaptiveLimiter({ algorithm: 'aimd', initialLimit: 2, maxLimit: 100 });
let open: () => void = () => {};
let gate = Promise.resolve();
let arrivals = 0;

@Controller()
class AppController {
  @Get('ok')
  ok() {
    return { ok: true };
  }

  @Get('hold')
  async hold() {
    arrivals++;
    await gate;
    return { ok: true };
  }

  @Get('boom')
  boom() {
    throw new Error('boom');
  }

  // A handler with limits of its own still shares the application's adaptive limit.
  @Get('own')
  @RateLimit({ limit: 100, period: '1m' })
  own() {
    return { ok: true };
  }
}

@Module({
  imports: [RateLimitModule.forRoot({ adaptive: { limiter } })],
  controllers: [AppController],
  providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
})
class AppModule {}

async function until(done: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 5000;
  while (!done()) {
    if (Date.now() > end) assert.fail(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

for (const platform of ['express', 'fastify'] as const) {
  describe(`sluice/nest adaptive on the ${platform} platform`, { timeout: 30_000 }, () => {
    let app: INestApplication;
    let base: string;
    before(async () => {
      const options = { logger: false as const };
      app = await (platform === 'fastify'
        ? NestFactory.create(AppModule, new FastifyAdapter(), options)
        : NestFactory.create(AppModule, options));
      await app.listen(0, '127.0.0.1');
      base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    });
    after(() => app.close());

    it('sheds past the limit with 503 and Retry-After; places come back on success, error and abort', async () => {
      gate = new Promise((r) => {
        open = r;
      });
      arrivals = 0;
      const controller = new AbortController();
      const held = fetch(`${base}/hold`);
      const aborted = fetch(`${base}/hold`, { signal: controller.signal }).catch((e: Error) => e);
      await until(() => arrivals === 2, 'two requests in their handler');
      const shed = await fetch(`${base}/own`);
      assert.equal(shed.status, 503);
      assert.equal(shed.headers.get('retry-after'), '1');
      assert.equal(((await shed.json()) as { error: { code: string } }).error.code, 'OVERLOADED');
      controller.abort();
      await aborted;
      open();
      assert.equal((await held).status, 200);
      await until(() => limiter.inFlight === 0, 'inFlight back to 0 after success and abort');
      assert.equal((await fetch(`${base}/boom`)).status, 500);
      assert.equal((await fetch(`${base}/ok`)).status, 200);
      await until(() => limiter.inFlight === 0, 'inFlight back to 0 after an error');
    });
  });
}
