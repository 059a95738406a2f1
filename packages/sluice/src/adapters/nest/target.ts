/**
 * What the guard limits, whatever Nest is serving: an HTTP request on Express or Fastify, the request
 * behind a GraphQL resolver, or one message of a WebSocket client. Only types come from Nest here.
 */
import type { ExecutionContext } from '@nestjs/common';
import { type AfterResponse, afterNodeResponse, type NodeResponseLike } from '../../http/count-by-response.js';
import type { RequestAccess } from '../../http/index.js';
import { type MeteredNodeResponse, meterNodeResponse } from '../../http/meter-response.js';
import type { TokenMeter } from '../../http/token-meter.js';

/** The kinds of Nest context the guard limits. */
export type NestTargetType = 'http' | 'graphql' | 'ws';

/**
 * One limited call: the Nest context and the native request in it (an Express or Fastify request, or
 * a WebSocket client for `ws`). Every option that is a function (`key`, `skip`, `cost`, …) receives it.
 */
export interface NestTarget {
  readonly type: NestTargetType;
  readonly context: ExecutionContext;
  /** Express `Request`, Fastify `FastifyRequest`, or the WebSocket client (`ws`, socket.io). */
  readonly request: unknown;
  /** Express `Response` or Fastify `FastifyReply`; undefined for WebSocket messages. */
  readonly response: unknown;
}

/** The Node request under an Express or a Fastify request (Fastify wraps it as `raw`). */
interface NodeLike {
  socket?: { remoteAddress?: string };
  headers?: Record<string, string | string[] | undefined>;
  method?: string;
  url?: string;
  originalUrl?: string;
}

/** The peer and upgrade headers of a WebSocket client: `ws` (`_socket`) or socket.io (`handshake`). */
interface WsClientLike {
  _socket?: { remoteAddress?: string };
  handshake?: { address?: string; headers?: Record<string, string | string[] | undefined> };
  conn?: { remoteAddress?: string };
}

const EMPTY: Record<string, string | string[] | undefined> = {};

function raw(t: NestTarget): NodeLike {
  const req = t.request as (NodeLike & { raw?: NodeLike }) | undefined;
  return req?.raw ?? req ?? {};
}

function headersOf(t: NestTarget): Record<string, string | string[] | undefined> {
  if (t.type === 'ws') return (t.request as WsClientLike | undefined)?.handshake?.headers ?? EMPTY;
  return raw(t).headers ?? EMPTY;
}

/** What the platform's request says about the proxies it trusts: Express's `app` or Fastify's `ips`. */
interface PlatformRequestLike {
  app?: { settings?: Record<string, unknown> };
  ip?: string;
  ips?: unknown;
}

/** Express's `trust proxy` setting when the request is Express's (false by default), else undefined. */
function expressTrust(t: NestTarget): unknown {
  return (t.request as PlatformRequestLike | undefined)?.app?.settings?.['trust proxy'];
}

/** How the framework-neutral core reads a NestTarget. */
export const nestAccess: RequestAccess<NestTarget> = {
  name: 'NestJS',
  peer(t) {
    if (t.type === 'ws') {
      const c = t.request as WsClientLike | undefined;
      return c?._socket?.remoteAddress ?? c?.handshake?.address ?? c?.conn?.remoteAddress;
    }
    return raw(t).socket?.remoteAddress;
  },
  header(t, name) {
    const value = headersOf(t)[name];
    return Array.isArray(value) ? value.join(', ') : value;
  },
  method: (t) => (t.type === 'ws' ? 'WS' : (raw(t).method ?? 'GET')),
  url(t) {
    if (t.type === 'ws') return `/${t.context.switchToWs().getPattern?.() ?? t.context.getHandler().name}`;
    const req = t.request as NodeLike | undefined;
    return req?.originalUrl ?? raw(t).url ?? '/';
  },
  headers: headersOf,
  // An app-wide sluice middleware before the guard (sluice/express, sluice/fastify) leaves its info here.
  rateLimitOf: (t) => (t.type === 'ws' ? undefined : (t.request as { rateLimit?: unknown } | undefined)?.rateLimit),
  // Nest parses the body before guards run (both platforms), for the tokenBudget option.
  body: (t) => (t.type === 'http' ? (t.request as { body?: unknown } | undefined)?.body : undefined),
  // The platform's own proxy trust, unless sluice's `trustProxy` is given — as the Express and Fastify
  // adapters do: `req.ip` is the client as the platform resolved it. WebSocket messages have none.
  framework: {
    setting: "the platform's trust proxy (Express app.set('trust proxy', …), Fastify { trustProxy })",
    example: "app.set('trust proxy', 'loopback, 10.0.0.0/8')",
    clientIp(t) {
      if (t.type === 'ws') return undefined;
      const req = t.request as PlatformRequestLike | undefined;
      if (req === undefined || req === null) return undefined;
      const express = expressTrust(t);
      if (req.app !== undefined) return express === undefined || express === false ? undefined : req.ip;
      // Fastify builds its requests with an `ips` accessor only when `trustProxy` is set.
      return 'ips' in req ? req.ip : undefined;
    },
    permissive: (t) => t.type !== 'ws' && expressTrust(t) === true,
  },
};

/** The GraphQL context object (the third resolver argument) as Apollo and Mercurius build it. */
interface GqlContextLike {
  req?: unknown;
  res?: unknown;
  request?: unknown;
  reply?: { request?: unknown };
}

/** The target of a context, or undefined for one the guard does not limit (microservices). */
export function targetOf(context: ExecutionContext): NestTarget | undefined {
  const type = context.getType<string>();
  if (type === 'http') {
    const http = context.switchToHttp();
    return { type, context, request: http.getRequest(), response: http.getResponse() };
  }
  if (type === 'graphql') {
    const ctx = (context.getArgByIndex(2) ?? {}) as GqlContextLike;
    const request = ctx.req ?? ctx.request ?? ctx.reply?.request;
    return { type, context, request, response: ctx.res ?? ctx.reply };
  }
  if (type === 'ws') return { type, context, request: context.switchToWs().getClient(), response: undefined };
  return undefined;
}

/** Sets `[name, value, …]` on an Express response or a Fastify reply. */
export function setHeaders(response: unknown, headers: readonly string[]): void {
  const res = response as {
    setHeader?: (name: string, value: string) => void;
    header?: (name: string, value: string) => void;
  };
  if (typeof res?.header === 'function' && typeof res.setHeader !== 'function') {
    for (let i = 0; i < headers.length; i += 2) res.header(headers[i] as string, headers[i + 1] as string);
  } else if (typeof res?.setHeader === 'function') {
    for (let i = 0; i < headers.length; i += 2) res.setHeader(headers[i] as string, headers[i + 1] as string);
  }
}

/** Feeds the tokenBudget's meter with the Node response under an Express response or a Fastify reply. */
export function meterTargetResponse(target: NestTarget, meter: TokenMeter): void {
  const res = target.response as (MeteredNodeResponse & { raw?: MeteredNodeResponse }) | undefined;
  const node = res?.raw ?? res;
  if (typeof node?.once === 'function') meterNodeResponse(node, meter);
  else void meter.end(200, false);
}

/**
 * Calls `after` once the call's response is done (its status, 0 if the client left first): on the
 * Node response under an Express response or a Fastify reply. A WebSocket message has no response, so
 * it is done when the guard has let it through.
 */
export function afterTargetResponse(target: NestTarget, after: AfterResponse): void {
  const res = target.response as (NodeResponseLike & { raw?: NodeResponseLike }) | undefined;
  const node = res?.raw ?? res;
  if (typeof node?.once === 'function') afterNodeResponse(node, after);
  else void after(200);
}
