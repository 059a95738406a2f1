/**
 * The per-request hot path of the Fastify plugin: a route's limiters decided in turn, each outcome applied to the
 * reply (info, headers, the after-response step); the first rejection answers the request.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { asError } from '../../core/errors.js';
import { watchResponse } from '../../http/client-watch.js';
import { afterNodeResponse } from '../../http/count-by-response.js';
import type { HttpOutcome } from '../../http/index.js';
import type { FastifyRateLimitOptions } from './options.js';
import { setReplyHeaders } from './reply-headers.js';
import type { Chain } from './route-chains.js';

/** Runs a chain from its first limiter; `done` is Fastify's hook callback. */
export type RunChain = (
  chain: Chain,
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void;

/** Creates the chain runner of a plugin whose rejections go to `handler` when given. */
export function createChainRunner(handler: FastifyRateLimitOptions['handler']): RunChain {
  function run(chain: Chain, i: number, request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    const limiter = chain[i];
    if (limiter === undefined) return done();
    let outcome: ReturnType<typeof limiter.decide>;
    try {
      if (limiter.watchesClient) watchResponse(request, reply.raw);
      outcome = limiter.decide(request);
    } catch (error) {
      return done(asError(error));
    }
    if (outcome instanceof Promise) {
      outcome.then(
        (o) => apply(o, chain, i, request, reply, done),
        (e) => done(asError(e)),
      );
    } else {
      apply(outcome, chain, i, request, reply, done);
    }
  }

  function apply(
    outcome: HttpOutcome,
    chain: Chain,
    i: number,
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ) {
    if (outcome.info !== undefined) request.rateLimit = outcome.info;
    if (outcome.afterResponse !== undefined) afterNodeResponse(reply.raw, outcome.afterResponse);
    setReplyHeaders(reply, outcome.headers);
    if (outcome.pass) return i + 1 < chain.length ? run(chain, i + 1, request, reply, done) : done();
    if (handler !== undefined && outcome.rejection !== undefined) return handler(request, reply, outcome.rejection);
    sendRejection(reply, outcome);
  }

  return (chain, request, reply, done) => run(chain, 0, request, reply, done);
}

/**
 * Answers a rejection. From a hook this ends the request; `done` must not be called as well. A Buffer,
 * because Fastify appends `; charset=utf-8` to the type of a string body, and every adapter sends the
 * same `application/json`.
 */
export function sendRejection(reply: FastifyReply, outcome: HttpOutcome): FastifyReply {
  return reply.code(outcome.status).header('content-type', outcome.contentType).send(Buffer.from(outcome.body));
}
