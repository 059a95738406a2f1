/**
 * The Fastify plugin's token-budget hook (the `tokenBudget` option): in preHandler, once the body is parsed, it
 * reserves the request's tokens and meters the reply, or answers 429.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PASS, type TokenBudget } from '../../http/index.js';
import { meterNodeResponse } from '../../http/meter-response.js';
import type { FastifyRateLimitOptions } from './options.js';
import { sendRejection } from './run-chain.js';

/** The preHandler hook of a plugin's token budget; rejections go to `handler` when given. */
export function budgetHook(stage: TokenBudget<FastifyRequest>, handler: FastifyRateLimitOptions['handler']) {
  return async function sluiceTokenBudget(request: FastifyRequest, reply: FastifyReply) {
    if ((request.routeOptions.config as { rateLimit?: unknown } | undefined)?.rateLimit === false) return;
    // The IETF fields the rate limits set are listed with the budget's.
    const present: string[] = [];
    for (const name of ['ratelimit-policy', 'ratelimit']) {
      const value = reply.getHeader(name);
      if (typeof value === 'string') present.push(name, value);
    }
    const outcome = await stage.admit(request, { ...PASS, headers: present, info: request.rateLimit ?? undefined });
    const h = outcome.headers;
    for (let i = 0; i < h.length; i += 2) reply.header(h[i] as string, h[i + 1] as string);
    if (outcome.pass) {
      if (outcome.meter !== undefined) meterNodeResponse(reply.raw, outcome.meter);
      return;
    }
    if (handler !== undefined && outcome.rejection !== undefined) {
      handler(request, reply, outcome.rejection);
      return reply;
    }
    return sendRejection(reply, outcome);
  };
}
