/**
 * The guard: limits each call by the handler's limits, sets the rate-limit headers, and refuses a call
 * over the limit the way its context expects — an HTTP 429 with the same headers and JSON body as every
 * sluice adapter, a GraphQL error carrying that status, or a WebSocket `exception` event.
 */
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { HttpException, Inject, Injectable } from '@nestjs/common';
import { type GateResponse, watchResponse } from '../../http/client-watch.js';
import type { HttpOutcome } from '../../http/index.js';
import type { RateLimitCore } from './core.js';
import { afterTargetResponse, meterTargetResponse, type NestTarget, setHeaders, targetOf } from './target.js';

/** The injection token of the guard's state (made by `RateLimitModule`). */
export const RATE_LIMIT_CORE = Symbol.for('sluice.nest.core');

/** Limits every call it guards; register it globally (`APP_GUARD`) or with `@UseGuards(RateLimitGuard)`. */
export class RateLimitGuard implements CanActivate {
  constructor(private readonly core: RateLimitCore) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const target = targetOf(context);
    if (target === undefined) return true;
    const limiter = this.core.limiterFor(context.getClass(), context.getHandler());
    if (limiter === undefined) return true;
    if (limiter.watchesClient) watchTarget(target);
    const outcome = await limiter.decide(target);
    // `req.rateLimit` for the handler, as the Express and Fastify adapters set it (not on a socket).
    if (outcome.info !== undefined && target.type !== 'ws' && typeof target.request === 'object' && target.request) {
      (target.request as { rateLimit?: unknown }).rateLimit = outcome.info;
    }
    if (target.response !== undefined) setHeaders(target.response, outcome.headers as readonly string[]);
    // Gives back what the call holds (an adaptive or concurrency place) and counts it by its response.
    if (outcome.afterResponse !== undefined) afterTargetResponse(target, outcome.afterResponse);
    if (outcome.pass) {
      if (outcome.meter !== undefined) meterTargetResponse(target, outcome.meter);
      return true;
    }
    throw await rejection(target, outcome);
  }
}
// Explicit tokens, applied without decorator syntax: nothing here depends on emitDecoratorMetadata.
Inject(RATE_LIMIT_CORE)(RateLimitGuard, undefined as unknown as string, 0);
Injectable()(RateLimitGuard);

/** Tells the core the Node response under an Express response or a Fastify reply (none for ws). */
function watchTarget(target: NestTarget): void {
  const res = target.response as (GateResponse & { raw?: GateResponse }) | undefined;
  const node = res?.raw ?? res;
  if (typeof node?.once === 'function') watchResponse(target, node);
}

/** The exception Nest turns into this context's refusal. */
async function rejection(target: NestTarget, outcome: HttpOutcome): Promise<Error> {
  const body = parseBody(outcome);
  if (target.type === 'ws') {
    // Loaded only by applications with gateways, which have @nestjs/websockets installed.
    const { WsException } = await import('@nestjs/websockets');
    const error = typeof body === 'object' && body !== null ? (body as { error?: object }).error : undefined;
    const payload = { status: 'error', ...(error ?? { message: String(body) }) };
    // socket.io sends the `exception` event Nest emits for a WsException; a plain `ws` socket's emit()
    // stays on the server, so the client is told here, in the same {event, data} shape.
    const client = target.request as { send?: (data: string) => void; handshake?: unknown };
    if (client.handshake === undefined && typeof client.send === 'function') {
      client.send(JSON.stringify({ event: 'exception', data: payload }));
    }
    return new WsException(payload);
  }
  const message = (body as { error?: { message?: unknown } } | null)?.error?.message;
  if (target.type === 'graphql') {
    // A GraphQL error with the rejection in its extensions (GraphQL over HTTP answers errors with 200);
    // the rate-limit headers and Retry-After are already on the response.
    const { GraphQLError } = await import('graphql');
    const error = (body as { error?: Record<string, unknown> } | null)?.error ?? {};
    return new GraphQLError(typeof message === 'string' ? message : 'Too many requests', {
      extensions: { ...error, code: error.code ?? 'RATE_LIMIT_EXCEEDED', status: outcome.status },
    });
  }
  return new HttpException(body as string | Record<string, unknown>, outcome.status, {
    description: typeof message === 'string' ? message : 'Too Many Requests',
  });
}

/** The rejection body as sent by the other adapters: JSON as an object (Nest sends objects as is). */
function parseBody(outcome: HttpOutcome): unknown {
  // application/json and application/problem+json (RFC 9457 problem details) alike.
  if (!/^application\/(problem\+)?json/.test(outcome.contentType)) return outcome.body;
  try {
    return JSON.parse(outcome.body) as unknown;
  } catch {
    return outcome.body;
  }
}
