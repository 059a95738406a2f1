/**
 * The middleware's `tokenBudget` option on every adapter, over real HTTP with a fake OpenAI-shaped
 * handler: a JSON answer and a streamed (SSE) one settle the usage they report, byte for byte unchanged;
 * a client that aborts mid-stream is charged what was produced; a request over the budget is a 429
 * with OpenAI's headers, and takes nothing from the rate limits.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { rateLimit as expressLimit } from '../../src/adapters/express.js';
import { rateLimit as fastifyLimit } from '../../src/adapters/fastify.js';
import { rateLimit as honoLimit } from '../../src/adapters/hono.js';
import { rateLimit as koaLimit } from '../../src/adapters/koa.js';
import { rateLimit as nodeLimit } from '../../src/adapters/node.js';
import { createManualClock } from '../../src/core/clock.js';
import type { RateLimitOptions } from '../../src/http/options.js';
import type { TokenBudgetSettlement } from '../../src/http/token-budget-options.js';
import { createTokenLimiter, estimateInputTokens, type TokenLimiter } from '../../src/llm/index.js';
import { listen, type Running, until } from './harness.js';

const DELTA = 'abcdefgh'; // 8 characters: two output tokens by the estimate
const sse = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
const delta = sse({ choices: [{ index: 0, delta: { content: DELTA } }] });
const JSON_ANSWER = JSON.stringify({
  id: 'x',
  choices: [{ message: { role: 'assistant', content: 'hi' } }],
  usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 },
});
const SSE_ANSWER = [
  delta,
  delta,
  delta,
  sse({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } }),
  'data: [DONE]\n\n',
];

/** The fake upstream: `?mode=json|sse|stall` (stall: three deltas, then nothing until `release`). */
function upstream(url: string, stall: Promise<void>): { type: string; chunks: () => AsyncGenerator<string> } {
  const mode = new URL(url, 'http://x').searchParams.get('mode');
  if (mode === 'json')
    return {
      type: 'application/json',
      chunks: async function* () {
        yield JSON_ANSWER;
      },
    };
  return {
    type: 'text/event-stream',
    chunks: async function* () {
      if (mode === 'sse') {
        for (const c of SSE_ANSWER) yield c;
        return;
      }
      yield delta + delta + delta;
      await stall;
    },
  };
}

type Start = (options: RateLimitOptions<never>, stall: Promise<void>) => Promise<Running>;

async function send(res: ServerResponse, url: string, stall: Promise<void>) {
  const { type, chunks } = upstream(url, stall);
  res.setHeader('content-type', type);
  for await (const c of chunks()) if (!res.destroyed) res.write(c);
  if (!res.destroyed) res.end();
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  let text = '';
  for await (const c of req) text += String(c);
  return text === '' ? undefined : JSON.parse(text);
}

const starts: Record<string, Start> = {
  express: (options, stall) => {
    const app = express();
    app.use(express.json());
    app.use(expressLimit(options as never));
    app.post('/chat', (req, res) => void send(res, req.originalUrl, stall));
    return listen(createServer(app));
  },
  'node:http': (options, stall) =>
    listen(createServer(nodeLimit(options as never)((req, res) => void send(res, req.url ?? '/', stall)))),
  koa: (options, stall) => {
    const app = new Koa();
    app.use(async (ctx, next) => {
      (ctx.request as { body?: unknown }).body = await readJson(ctx.req);
      await next();
    });
    app.use(koaLimit(options as never));
    app.use((ctx) => {
      const { type, chunks } = upstream(ctx.originalUrl, stall);
      ctx.type = type;
      ctx.body = Readable.from(chunks());
    });
    return listen(createServer(app.callback()));
  },
  fastify: async (options, stall) => {
    const app = Fastify();
    await app.register(fastifyLimit(options as never));
    app.post('/chat', async (request, reply) => {
      const { type, chunks } = upstream(request.url, stall);
      return reply.header('content-type', type).send(Readable.from(chunks()));
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      close: async () => {
        app.server.closeAllConnections();
        await app.close();
      },
    };
  },
  hono: (options, stall) => {
    const app = new Hono();
    app.use(honoLimit(options as never));
    app.post('/chat', (c) => {
      const { type, chunks } = upstream(c.req.url, stall);
      const it = chunks();
      const encoder = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = await it.next();
          if (next.done) controller.close();
          else controller.enqueue(encoder.encode(next.value));
        },
        cancel: () => void it.return(undefined),
      });
      return c.body(body, 200, { 'content-type': type });
    });
    return new Promise((resolve) => {
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
        resolve({
          url: `http://127.0.0.1:${info.port}`,
          close: () =>
            new Promise<void>((done) => {
              (server as Server).closeAllConnections();
              server.close(() => done());
            }),
        }),
      );
    });
  },
};

const BODY = { model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'Say hello to the test suite.' }] };
const post = (url: string, mode: string, init: RequestInit = {}, body: unknown = BODY) =>
  fetch(`${url}/chat?mode=${mode}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'k1' },
    body: JSON.stringify(body),
    ...init,
  });

function setup(framework: string, extra: Partial<RateLimitOptions<never>> = {}, defaultMaxOutputTokens = 4096) {
  const clock = createManualClock(1_700_000_000_000);
  const tokens: TokenLimiter = createTokenLimiter({
    requests: { limit: 100, period: '1m', algorithm: 'fixed-window' },
    totalTokens: { limit: 10_000, period: '1m', algorithm: 'fixed-window' },
    clock,
  });
  const settled: TokenBudgetSettlement<unknown>[] = [];
  let release!: () => void;
  const stall = new Promise<void>((r) => {
    release = r;
  });
  const options = {
    ...extra,
    tokenBudget: {
      limiter: tokens,
      defaultMaxOutputTokens,
      onSettle: (s: TokenBudgetSettlement<unknown>) => void settled.push(s),
    },
  } as RateLimitOptions<never>;
  // node:http has no parsed body: its reservation is the default max output with no input estimate.
  const hasBody = framework !== 'node:http';
  const reservedFor = (body: typeof BODY) =>
    hasBody ? estimateInputTokens(body) + body.max_tokens : defaultMaxOutputTokens;
  return {
    tokens,
    settled,
    stall,
    release,
    options,
    reservedFor,
    start: () => (starts[framework] as Start)(options, stall),
  };
}

for (const framework of Object.keys(starts)) {
  describe(`tokenBudget on ${framework}`, () => {
    it('a JSON answer settles its usage; the next reservation sees it; OpenAI headers beside RateLimit', async () => {
      const s = setup(framework, { limit: 50, period: '1m' });
      const server = await s.start();
      try {
        const first = await post(server.url, 'json');
        assert.equal(first.status, 200);
        assert.equal(await first.text(), JSON_ANSWER);
        assert.equal(first.headers.get('x-ratelimit-limit-tokens'), '10000');
        assert.equal(first.headers.get('x-ratelimit-remaining-tokens'), String(10_000 - s.reservedFor(BODY)));
        assert.equal(first.headers.get('x-ratelimit-remaining-requests'), '99');
        assert.match(
          first.headers.get('ratelimit') ?? '',
          /"default";r=49;t=\d+, "requests";r=99;t=\d+, "total_tokens";r=/,
        );
        await until(() => s.settled.length === 1, 'the JSON answer settled');
        assert.deepEqual(s.settled[0]?.usage, { inputTokens: 12, outputTokens: 30 });
        assert.equal(s.settled[0]?.source, 'reported');
        assert.equal(s.settled[0]?.key, '127.0.0.1');
        assert.ok(s.settled[0]?.result.ok);
        const second = await post(server.url, 'json');
        await second.text();
        assert.equal(second.headers.get('x-ratelimit-remaining-tokens'), String(10_000 - 42 - s.reservedFor(BODY)));
      } finally {
        await server.close();
      }
    });

    it('a streamed answer passes unchanged and settles the usage of its last event', async () => {
      const s = setup(framework);
      const server = await s.start();
      try {
        const res = await post(server.url, 'sse');
        assert.equal(await res.text(), SSE_ANSWER.join(''));
        await until(() => s.settled.length === 1, 'the stream settled');
        assert.deepEqual(s.settled[0]?.usage, { inputTokens: 12, outputTokens: 7 });
        assert.equal(s.settled[0]?.aborted, false);
      } finally {
        await server.close();
      }
    });

    it('a client that aborts mid-stream is charged what was produced', async () => {
      const s = setup(framework);
      const server = await s.start();
      try {
        const controller = new AbortController();
        const res = await post(server.url, 'stall', { signal: controller.signal });
        const reader = (res.body as ReadableStream<Uint8Array>).getReader();
        let seen = '';
        while (!seen.includes(DELTA.repeat(1))) seen += new TextDecoder().decode((await reader.read()).value);
        controller.abort();
        await until(() => s.settled.length === 1, 'the aborted stream settled');
        const settled = s.settled[0] as TokenBudgetSettlement<unknown>;
        assert.equal(settled.aborted, true);
        assert.equal(settled.source, 'produced');
        const estimate = framework === 'node:http' ? 0 : estimateInputTokens(BODY);
        assert.deepEqual(settled.usage, { inputTokens: estimate, outputTokens: 6 });
        assert.ok(settled.result.ok);
        assert.equal(s.tokens.outstanding, 0);
      } finally {
        s.release();
        await server.close();
      }
    });

    it('a request over the token budget is a 429 with Retry-After and takes nothing from the rate limit', async () => {
      const s = setup(framework, { limit: 50, period: '1m' }, 6000);
      const server = await s.start();
      const controller = new AbortController();
      try {
        const big = { ...BODY, max_tokens: 6000 };
        // A stream in progress holds its reservation; the next one does not fit beside it.
        const holding = await post(server.url, 'stall', { signal: controller.signal }, big);
        assert.equal(holding.status, 200);
        const refused = await post(server.url, 'json', {}, big);
        assert.equal(refused.status, 429, await refused.text());
        assert.ok(Number(refused.headers.get('retry-after')) > 0);
        assert.equal(refused.headers.get('x-ratelimit-remaining-tokens'), String(10_000 - s.reservedFor(big)));
        assert.equal(s.tokens.outstanding, 1);
        controller.abort();
        await until(() => s.settled.length === 1, 'the held stream settled');
        const next = await post(server.url, 'json', {}, { ...BODY, max_tokens: 10 });
        await next.text();
        assert.equal(next.status, 200);
        assert.equal(next.headers.get('x-ratelimit-remaining'), '48', 'the refused request was given back');
      } finally {
        controller.abort();
        s.release();
        await server.close();
      }
    });
  });
}
