/**
 * sluice/nest stacked on another sluice middleware (sluice/express or sluice/fastify applied to the whole
 * app): the guard's rejection gives back what the middleware took, and handlers read `req.rateLimit`.
 */
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Controller, Get, Module, Post, Req } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { rateLimit as expressLimit } from '../../src/adapters/express.js';
import { rateLimit as fastifyLimit } from '../../src/adapters/fastify.js';
import { RateLimit, RateLimitGuard, RateLimitModule, SkipRateLimit } from '../../src/adapters/nest.js';
import { createManualClock } from '../../src/core/clock.js';
import type { RateLimitInfo } from '../../src/http/index.js';
import { T0 } from './suite.js';

@Controller()
class StackedController {
  @Post('login')
  @RateLimit({ limit: 1, period: '10s' })
  login(req: { rateLimit?: RateLimitInfo }) {
    const info = req.rateLimit;
    return { name: info?.name, remaining: info?.remaining, used: info?.used, limits: info?.limits.length };
  }

  @Get('open')
  @SkipRateLimit()
  open() {
    return 'ok';
  }
}
// Biome parses no parameter decorators: @Req() applied as the compiler would.
Req()(StackedController.prototype, 'login', 0);

@Module({
  imports: [RateLimitModule.forRoot({ limit: 100, period: '1m', clock: createManualClock(T0) })],
  controllers: [StackedController],
  providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
})
class StackedModule {}

for (const platform of ['express', 'fastify'] as const) {
  describe(`sluice/nest after an app-wide sluice middleware (${platform} platform)`, { timeout: 60_000 }, () => {
    it("the guard's 429 takes nothing from the middleware's limit; the handler reads req.rateLimit", async () => {
      const site = { name: 'site', limit: 3, period: '1m', clock: createManualClock(T0) } as const;
      let app: Awaited<ReturnType<typeof NestFactory.create>>;
      if (platform === 'express') {
        app = await NestFactory.create(StackedModule, { logger: false });
        app.use(expressLimit(site));
      } else {
        const fastify = await NestFactory.create<NestFastifyApplication>(StackedModule, new FastifyAdapter(), {
          logger: false,
        });
        await fastify.register(fastifyLimit(site) as never);
        app = fastify;
      }
      await app.listen(0, '127.0.0.1');
      const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      try {
        const first = await fetch(`${base}/login`, { method: 'POST' });
        assert.equal(first.status, 201);
        assert.deepEqual(
          await first.json(),
          { name: 'StackedController.login', remaining: 0, used: 1, limits: 2 },
          "req.rateLimit lists the middleware's limit and the handler's, led by the one closest to exhaustion",
        );
        for (let i = 0; i < 3; i++) {
          const over = await fetch(`${base}/login`, { method: 'POST' });
          assert.equal(over.status, 429);
          await over.arrayBuffer();
        }
        const open = await fetch(`${base}/open`);
        assert.equal(open.status, 200);
        assert.equal(
          open.headers.get('ratelimit'),
          '"site";r=1;t=60',
          "site took one for the first login and one now: the guard's three 429s took none",
        );
      } finally {
        await app.close();
      }
    });
  });
}
