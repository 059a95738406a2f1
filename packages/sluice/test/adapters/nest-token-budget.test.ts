/**
 * sluice/nest's `tokenBudget` option in real Nest applications (Express and Fastify platforms): the
 * guard reserves from the parsed body, the handler's JSON answer settles its reported usage, the next
 * request sees it in OpenAI's headers, and a request over the budget is a 429.
 */
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Controller, type INestApplication, Module, Post } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { RateLimitGuard, RateLimitModule } from '../../src/adapters/nest.js';
import type { TokenBudgetSettlement } from '../../src/http/token-budget-options.js';
import { createTokenLimiter, estimateInputTokens } from '../../src/llm/index.js';
import { until } from './harness.js';

const BODY = { model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'Hello from Nest' }] };

@Controller()
class ChatController {
  @Post('chat')
  chat() {
    return { choices: [], usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 } };
  }
}

function appModule(settled: TokenBudgetSettlement<unknown>[]) {
  const limiter = createTokenLimiter({
    totalTokens: { limit: 1000, period: '1h', algorithm: 'fixed-window' },
    clock: { now: () => 1_700_000_000_000 },
  });
  @Module({
    imports: [RateLimitModule.forRoot({ tokenBudget: { limiter, onSettle: (s) => void settled.push(s) } })],
    controllers: [ChatController],
    providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
  })
  class AppModule {}
  return AppModule;
}

for (const platform of ['express', 'fastify'] as const) {
  describe(`sluice/nest tokenBudget on the ${platform} platform`, { timeout: 30_000 }, () => {
    let app: INestApplication;
    let base: string;
    // Per platform: the two suites may run at once.
    const settled: TokenBudgetSettlement<unknown>[] = [];
    before(async () => {
      const options = { logger: false as const };
      app = await (platform === 'fastify'
        ? NestFactory.create(appModule(settled), new FastifyAdapter(), options)
        : NestFactory.create(appModule(settled), options));
      await app.listen(0, '127.0.0.1');
      base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    });
    after(() => app.close());

    it('reserves from the body, settles the reported usage, refuses past the budget', async () => {
      const post = (body: unknown) =>
        fetch(`${base}/chat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const reserve = estimateInputTokens(BODY) + 100;
      const first = await post(BODY);
      assert.equal(first.status, 201);
      assert.equal(first.headers.get('x-ratelimit-remaining-tokens'), String(1000 - reserve));
      await first.text();
      await until(() => settled.length === 1, 'the answer settled');
      assert.deepEqual(settled[0]?.usage, { inputTokens: 12, outputTokens: 30 });
      const second = await post(BODY);
      await second.text();
      assert.equal(second.headers.get('x-ratelimit-remaining-tokens'), String(1000 - 42 - reserve));
      await until(() => settled.length === 2, 'the second answer settled');
      const refused = await post({ ...BODY, max_tokens: 5000 });
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('x-ratelimit-remaining-tokens'), String(1000 - 84));
    });
  });
}
