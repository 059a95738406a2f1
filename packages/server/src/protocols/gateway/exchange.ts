/**
 * One proxied request (an exchange): the upstream request made for it, bodies piped both ways, the
 * upstream deadline, and the client's in-flight slot held until both sides have closed.
 */
import {
  type Agent,
  type ClientRequest,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { type DeadlineEntry, DeadlineList } from '../../support/deadlines.js';
import type { ClientSlots } from './client-slots.js';
import { forwardableRaw, upstreamHeaderList } from './forwarding.js';
import type { Admitted } from './gateway-admission.js';
import { errorAnswer, type GatewayAnswer } from './gateway-answer.js';

/** Where proxied requests go, read once from the upstream URL (URL getters are not free; this runs per request). */
export interface UpstreamTarget {
  readonly send: typeof httpsRequest;
  readonly hostname: string;
  readonly port: string | number;
  readonly host: string;
  readonly basePath: string;
  /** The TLS server name Node's agent would derive from the Host header (the upstream's) on every request. */
  readonly servername: string;
  readonly agent: Agent;
}

/** What proxying needs from its gateway. */
export interface ProxyOptions {
  readonly upstream: URL;
  readonly agent: Agent;
  readonly slots: ClientSlots;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  readonly upstreamTimeoutMs: number;
  answer(res: ServerResponse, a: GatewayAnswer): void;
  /** Whether the TCP peer of a request is a trusted proxy (its forwarding headers are kept and extended). */
  trustsPeer(req: IncomingMessage): boolean;
}

/** A proxy for admitted requests, and `close` to stop its deadline timer. */
export function createProxy(options: ProxyOptions) {
  const { upstream, trustsPeer } = options;
  const target = upstreamTarget(upstream, options.agent);
  const context: ExchangeContext = {
    slots: options.slots,
    // One coarse timer for every request's upstream deadline (a deadline fires at most ~3 % late).
    deadlines: new DeadlineList(
      options.upstreamTimeoutMs,
      Math.max(10, Math.min(1000, Math.ceil(options.upstreamTimeoutMs / 64))),
    ),
    metrics: options.metrics,
    logger: options.logger,
    upstreamOrigin: upstream.origin,
    upstreamTimeoutMs: options.upstreamTimeoutMs,
    answer: options.answer,
  };
  return {
    proxy(req: IncomingMessage, res: ServerResponse, admitted: Admitted): void {
      // No `protocol`: `send` and the agent already say which (every option here is copied per request).
      const outgoing = target.send({
        hostname: target.hostname,
        port: target.port,
        method: req.method,
        path: target.basePath + admitted.target,
        headers: upstreamHeaderList(req, admitted.ip, trustsPeer(req), target.host),
        servername: target.servername,
        agent: target.agent,
      });
      const exchange = new Exchange(context, res, outgoing, admitted.headers, admitted.key);
      setExchange(outgoing, exchange);
      setExchange(res, exchange);
      setExchange(req, exchange);
      // on(), not once(), for events that fire once anyway: no wrapper per request. Module-level listeners
      // reach the exchange through the emitter: no closure per request.
      outgoing.on('finish', onOutgoingFinish);
      outgoing.on('close', onOutgoingClose);
      res.on('close', onClientClose);
      outgoing.on('response', onUpstreamResponse);
      outgoing.on('error', onOutgoingError);
      req.pipe(outgoing);
      req.on('error', onRequestError);
    },
    close: () => context.deadlines.close(),
  };
}

/** Where requests to `upstream` go, worked out once. */
export function upstreamTarget(upstream: URL, agent: Agent): UpstreamTarget {
  const secure = upstream.protocol === 'https:';
  const hostname = upstream.hostname.replace(/^\[|\]$/g, '');
  return {
    send: secure ? httpsRequest : (httpRequest as typeof httpsRequest),
    hostname,
    port: upstream.port || (secure ? 443 : 80),
    host: upstream.host,
    basePath: upstream.pathname.replace(/\/$/, ''),
    servername: isIP(hostname) === 0 ? hostname : '',
    agent,
  };
}

/** What every proxied request of one gateway shares. */
interface ExchangeContext {
  slots: ClientSlots;
  deadlines: DeadlineList;
  metrics: ServiceMetrics;
  logger: Logger;
  upstreamOrigin: string;
  upstreamTimeoutMs: number;
  answer(res: ServerResponse, a: GatewayAnswer): void;
}

const kExchange = Symbol('sluice.gateway.exchange');
type Carrier = { [kExchange]?: Exchange };

function setExchange(emitter: object, exchange: Exchange): void {
  (emitter as Carrier)[kExchange] = exchange;
}

function exchangeOf(emitter: object): Exchange {
  return (emitter as Carrier)[kExchange] as Exchange;
}

/**
 * One proxied request: the client's request and response, the upstream request, the rate-limit headers to
 * add, and the client's in-flight slot, held until both the client's response and the upstream request
 * are closed. Its listeners are module-level functions that find it through the emitter, so proxying a
 * request makes this one object rather than a closure per event.
 */
class Exchange implements DeadlineEntry {
  deadlineAt = 0;
  deadlinePrev: DeadlineEntry | undefined = undefined;
  deadlineNext: DeadlineEntry | undefined = undefined;
  /** The upstream's response headers have come (its deadline no longer applies). */
  responded = false;
  /** Sides still open: the client's response and the upstream request. */
  private open = 2;

  constructor(
    readonly context: ExchangeContext,
    readonly res: ServerResponse,
    readonly outgoing: ClientRequest,
    readonly extra: Record<string, string>,
    readonly key: string,
  ) {}

  /** One side has closed; the client's slot goes back when both have. */
  sideClosed(): void {
    if (--this.open === 0) this.context.slots.release(this.key);
  }

  /** The upstream did not start answering within the upstream timeout of the request being sent: 504. */
  expire(): void {
    const { context } = this;
    context.logger.warn(
      { upstream: context.upstreamOrigin, timeoutMs: context.upstreamTimeoutMs },
      'upstream timed out',
    );
    context.answer(
      this.res,
      errorAnswer(
        504,
        'ERR_SLUICE_UPSTREAM_TIMEOUT',
        `the upstream did not answer within ${context.upstreamTimeoutMs} ms`,
        this.extra,
      ),
    );
    this.outgoing.destroy();
  }
}

/**
 * The whole request is sent: the upstream has the upstream timeout to start answering. (While the body
 * is still coming in, the request timeout is the bound; a request waiting for a pooled socket is not
 * sent, and so is bounded by it too.)
 */
function onOutgoingFinish(this: ClientRequest): void {
  const exchange = exchangeOf(this);
  if (!exchange.responded) exchange.context.deadlines.add(exchange);
}

function onOutgoingClose(this: ClientRequest): void {
  const exchange = exchangeOf(this);
  exchange.context.deadlines.remove(exchange);
  exchange.sideClosed();
}

function onClientClose(this: ServerResponse): void {
  const exchange = exchangeOf(this);
  exchange.context.deadlines.remove(exchange);
  exchange.sideClosed();
  // The client went away before the upstream finished: stop the upstream request too.
  if (!this.writableFinished) exchange.outgoing.destroy();
}

function onUpstreamResponse(this: ClientRequest, incoming: IncomingMessage): void {
  const exchange = exchangeOf(this);
  exchange.responded = true;
  exchange.context.deadlines.remove(exchange);
  const res = exchange.res;
  if (res.headersSent || res.destroyed) {
    incoming.destroy();
    return;
  }
  const out = forwardableRaw(incoming.rawHeaders, exchange.extra);
  const status = incoming.statusCode ?? 502;
  res.writeHead(status, out);
  exchange.context.metrics.gateway(status);
  // pipe() rather than stream.pipeline(): on Node 20 pipeline() builds an AbortSignal and, when the
  // streams finish, a DOMException per call — ~10% of the gateway's CPU per proxied request. The
  // failures pipeline() would handle are handled here: a broken upstream response ends the client's.
  incoming.pipe(res);
  incoming.on('error', onIncomingError);
}

/** The upstream's response broke off: so does the client's (found through the request it answers). */
function onIncomingError(this: IncomingMessage & { req: ClientRequest }): void {
  exchangeOf(this.req).res.destroy();
}

function onOutgoingError(this: ClientRequest, error: Error): void {
  const exchange = exchangeOf(this);
  const { context, res } = exchange;
  context.deadlines.remove(exchange);
  if (res.headersSent) {
    res.destroy(error);
    return;
  }
  // A client that has gone (its going destroys the upstream request) is not an unreachable upstream.
  if (res.destroyed) return;
  context.logger.warn({ err: error.message, upstream: context.upstreamOrigin }, 'upstream unavailable');
  context.answer(
    res,
    errorAnswer(502, 'ERR_SLUICE_UPSTREAM_UNAVAILABLE', 'the upstream could not be reached', exchange.extra),
  );
}

function onRequestError(this: IncomingMessage): void {
  exchangeOf(this).outgoing.destroy();
}
