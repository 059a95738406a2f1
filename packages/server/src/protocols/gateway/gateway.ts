import {
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Decision } from 'sluice';
import { combineDecisions, isSluiceError } from 'sluice';
import type { HttpDomainDescriptors, RulesEngine } from 'sluice/rules';
import { httpDescriptorsFor, normalizePath } from 'sluice/rules';
import type { AccessLists } from '../../core/access-lists.js';
import type { Decided, Decider } from '../../core/decide.js';
import { isStoreError } from '../../core/decide.js';
import { rejectionBody } from '../../core/rate-limit-headers.js';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { assertRequestLengths } from '../../rls/codec.js';
import { type DeadlineEntry, DeadlineList } from '../../support/deadlines.js';
import { sendJsonText } from '../http/respond.js';
import { AddressDescriptors } from './address-descriptors.js';
import { type ClientSlots, createClientSlots } from './client-slots.js';
import { forwardableRaw, upstreamHeaderList, upstreamHeaders } from './forwarding.js';
import { proxyUpgrade, rejectUpgrade } from './upgrade.js';
import { createUpstreamAgent } from './upstream-pool.js';

/** Time and concurrency bounds of the gateway (every one has a `sluice serve` flag; see docs/security.md). */
export interface GatewayLimits {
  /** Longest time to receive a request's headers. @default 10 s */
  readonly headersTimeoutMs: number;
  /** Longest time to receive a whole request, body included (a slow upload is cut with 408). @default 30 s */
  readonly requestTimeoutMs: number;
  /** Longest silence on a client or upstream connection while a request is in flight. @default 30 s */
  readonly idleTimeoutMs: number;
  /** Longest wait for the upstream's response headers once the whole request is sent (504 after). @default 30 s */
  readonly upstreamTimeoutMs: number;
  /** Most requests one client (address, IPv6 /56) may have in flight through the gateway. @default 64 */
  readonly maxClientInFlight: number;
  /** Connections to the upstream, at most. @default 256 */
  readonly maxUpstreamSockets: number;
}

export const DEFAULT_GATEWAY_LIMITS: GatewayLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  upstreamTimeoutMs: 30_000,
  maxClientInFlight: 64,
  maxUpstreamSockets: 256,
};

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** Where allowed requests go, e.g. `http://127.0.0.1:3000` (a path prefix is kept). */
  upstream: URL;
  engine: RulesEngine;
  decider: Decider;
  lists: AccessLists;
  metrics: ServiceMetrics;
  logger: Logger;
  /** The client address of a request (trusted proxies applied). */
  clientIp(req: IncomingMessage): string;
  /** The key a client address counts under: IPv6 masked to its /56 (what rules and the in-flight cap see). */
  clientKey(ip: string): string;
  /** Whether the TCP peer of a request is a trusted proxy (its forwarding headers are kept and extended). */
  trustsPeer(req: IncomingMessage): boolean;
  limits?: Partial<GatewayLimits>;
}

type Verdict = { verdict: 'pass' | 'limited' | 'denied'; headers: Record<string, string>; binding?: Decision };

/** The verdicts made without a decision, shared (nothing writes to a verdict or its headers). */
const PASS: Verdict = { verdict: 'pass', headers: {} };
const DENIED: Verdict = { verdict: 'denied', headers: {} };

/** Whether a request may go on: where to, for whom, and the headers to add — or what to answer instead. */
type Admission = Admitted | { ok: false; answer: GatewayAnswer };

/** A request let through: its target, client address, the headers to add, and the key its slot is held under. */
interface Admitted {
  ok: true;
  target: string;
  ip: string;
  headers: Record<string, string>;
  key: string;
}

/** A gateway answer written by the gateway itself: status, its headers, and a JSON error body. */
export interface GatewayAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function errorAnswer(status: number, code: string, message: string, headers: Record<string, string> = {}) {
  return { status, headers, body: JSON.stringify({ error: { code, message } }) };
}

/**
 * Creates the gateway (not yet listening): every request is turned into descriptors by the config's
 * `http:` rules, decided, and either answered 429 (403 for a deny-list match) here or reverse-proxied to
 * the upstream with bodies streamed both ways and the rate-limit headers added. The upstream's status
 * and headers are kept; 502 when it cannot be reached, 504 when it does not answer in time. Websocket
 * upgrades are rate limited the same way and then tunnelled; other upgrades (`h2c`) are refused.
 *
 * The path is normalised before the rules see it and before it is forwarded (`normalizePath`), so a
 * rule on `/login` also covers `//login`, `/a/../login` and `/%6Cogin`; a malformed escape is a 400.
 */
export function createGateway(options: GatewayOptions): Server {
  const { upstream, engine, decider, lists, metrics, logger } = options;
  const limits: GatewayLimits = { ...DEFAULT_GATEWAY_LIMITS, ...options.limits };
  const secure = upstream.protocol === 'https:';
  const agent = createUpstreamAgent(secure, limits.maxUpstreamSockets, limits.idleTimeoutMs);
  const send = secure ? httpsRequest : httpRequest;
  const basePath = upstream.pathname.replace(/\/$/, '');
  // Read once: URL getters are not free, and these run for every request.
  const upstreamHostname = upstream.hostname.replace(/^\[|\]$/g, '');
  const upstreamPort = upstream.port || (secure ? 443 : 80);
  const upstreamHost = upstream.host;
  // The TLS server name Node's agent would derive from the Host header (the upstream's) on every request.
  const upstreamServername = isIP(upstreamHostname) === 0 ? upstreamHostname : '';
  const slots = createClientSlots(limits.maxClientInFlight);
  // The usual config limits per client address only: its descriptors are worked out once per client.
  const addressDescriptors = new AddressDescriptors();

  function answer(res: ServerResponse, a: GatewayAnswer): void {
    if (res.headersSent || res.destroyed) return;
    sendJsonText(res, a.status, a.body, a.headers);
    metrics.gateway(a.status);
  }

  const context: ExchangeContext = {
    slots,
    // One coarse timer for every request's upstream deadline (a deadline fires at most ~3 % late).
    deadlines: new DeadlineList(
      limits.upstreamTimeoutMs,
      Math.max(10, Math.min(1000, Math.ceil(limits.upstreamTimeoutMs / 64))),
    ),
    metrics,
    logger,
    upstreamOrigin: upstream.origin,
    upstreamTimeoutMs: limits.upstreamTimeoutMs,
    answer,
  };

  // The decider's synchronous entry (it throws what decide() would reject with), when it has one.
  const decideNow = decider.decideNow?.bind(decider);

  /**
   * The verdict on a request: at once when no decision is needed (a list entry, no `http:` rule
   * matched) or the decider answers at once (one domain on the memory store), else once the decider has
   * answered (one domain's decision is made a verdict by the caller, in its own promise step). Plain
   * promise steps, not async functions: this runs for every request.
   */
  function decide(
    req: IncomingMessage,
    target: string,
    ip: string,
    key: string,
  ): Verdict | Decided | Promise<Decided | Verdict> {
    const list = lists.match('', 'remote_address', ip);
    if (list === 'deny') return DENIED;
    if (list === 'allow') return PASS;
    const ruleSet = engine.ruleSet;
    let groups = addressDescriptors.get(ruleSet, key);
    if (groups === undefined) {
      groups = httpDescriptorsFor(ruleSet, {
        method: req.method ?? 'GET',
        // The path and query as forwarded: `query_parameters` rules read the query from it.
        path: target,
        headers: req.headers,
        remoteAddress: key,
      });
      for (const group of groups) assertRequestLengths(group);
      addressDescriptors.set(key, groups);
    }
    if (groups.length === 0) return PASS;
    // The decision itself: at once when the store answers at once (the memory store: no promise, no
    // closure, no microtask), else made a verdict by admit()'s one promise step (no step of its own here).
    // A group is a request as it is ({ domain, descriptors }), checked when it was worked out.
    const group = groups[0] as (typeof groups)[number];
    if (groups.length === 1)
      return decideNow === undefined ? decider.decide(group, 'gateway') : decideNow(group, 'gateway');
    return decideGroups(groups);
  }

  /** One decided domain: its headers, and a refusal when it is over the limit. */
  function verdictOf(answer: Decided): Verdict {
    if (answer.overallCode !== 'OVER_LIMIT') return { verdict: 'pass', headers: answer.headers };
    const binding = answer.binding;
    return {
      verdict: binding?.reason === 'denied' ? 'denied' : 'limited',
      headers: answer.headers,
      ...(binding ? { binding } : {}),
    };
  }

  /** Several domains' rules matched: decided one after another, the closest to exhaustion reported. */
  async function decideGroups(groups: readonly HttpDomainDescriptors[]): Promise<Verdict> {
    const answers: Decided[] = [];
    for (const group of groups) answers.push(await decider.decide(group, 'gateway'));
    const bindings = answers.flatMap((a) => (a.binding === undefined ? [] : [a.binding]));
    const binding = bindings.length === 0 ? undefined : combineDecisions(bindings);
    const chosen = answers.find((a) => a.binding === binding) ?? answers[0];
    const headers = chosen?.headers ?? {};
    if (answers.some((a) => a.overallCode === 'OVER_LIMIT')) {
      return { verdict: binding?.reason === 'denied' ? 'denied' : 'limited', headers, ...(binding ? { binding } : {}) };
    }
    return { verdict: 'pass', headers };
  }

  /** What the gateway answers instead of proxying; undefined to proxy. */
  function refusal(verdict: Verdict): GatewayAnswer | undefined {
    if (verdict.verdict === 'pass') return undefined;
    const rejection = rejectionBody(verdict.verdict, verdict.binding);
    return { status: rejection.status, headers: verdict.headers, body: rejection.body };
  }

  function failure(error: unknown): GatewayAnswer {
    if (isStoreError(error)) {
      const rejection = rejectionBody('unavailable', undefined);
      return { status: rejection.status, headers: { 'retry-after': '1' }, body: rejection.body };
    }
    if (isSluiceError(error) && error.code.startsWith('ERR_SLUICE_REQUEST_')) {
      return errorAnswer(400, error.code, error.message);
    }
    logger.error({ err: error }, 'gateway decision failed');
    return errorAnswer(500, 'ERR_SLUICE_INTERNAL', 'internal error');
  }

  /**
   * The request's target path, normalised, and its query as sent: what the rules see and what is forwarded,
   * the same. Undefined for anything else than an origin-form target with valid escapes — an absolute-form
   * (`http://host/login`) or asterisk-form target too: an upstream would read its path its own way.
   */
  function targetOf(req: IncomingMessage): { path: string; query: string } | undefined {
    const url = req.url ?? '/';
    // A request target never carries a fragment (RFC 9112 §3.2), but Node passes a raw `#` through and an
    // upstream may cut the target there: `/login#x` would be matched as `/login#x` and served as `/login`.
    // (An escaped `%23` is no fragment: it stays escaped in the path, for the rules and the upstream alike.)
    if (url.includes('#')) return undefined;
    const q = url.indexOf('?');
    const path = normalizePath(q === -1 ? url : url.slice(0, q));
    return path === undefined ? undefined : { path, query: q === -1 ? '' : url.slice(q) };
  }

  function proxy(req: IncomingMessage, res: ServerResponse, admitted: Admitted): void {
    // No `protocol`: `send` and the agent already say which (every option here is copied per request).
    const outgoing = send({
      hostname: upstreamHostname,
      port: upstreamPort,
      method: req.method,
      path: basePath + admitted.target,
      headers: upstreamHeaderList(req, admitted.ip, options.trustsPeer(req), upstreamHost),
      servername: upstreamServername,
      agent,
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
  }

  /**
   * The checks every request goes through before it is proxied or tunnelled, in order: at once when no
   * decision is needed, else a promise. The closures of the promise path are made only on that path.
   */
  function admit(req: IncomingMessage): Admission | Promise<Admission> {
    const target = targetOf(req);
    if (target === undefined) {
      return {
        ok: false,
        answer: errorAnswer(
          400,
          'ERR_SLUICE_BAD_PATH',
          "send an origin-form request target: a path starting with '/', %-escapes of two hex digits, no '#'",
        ),
      };
    }
    const ip = options.clientIp(req);
    const key = options.clientKey(ip);
    if (!slots.acquire(key)) {
      return {
        ok: false,
        answer: errorAnswer(
          429,
          'ERR_SLUICE_TOO_MANY_IN_FLIGHT',
          `at most ${limits.maxClientInFlight} requests per client may be in flight through the gateway`,
          { 'retry-after': '1' },
        ),
      };
    }
    const targetText = target.query === '' ? target.path : target.path + target.query;
    let verdict: Verdict | Decided | Promise<Decided | Verdict>;
    try {
      verdict = decide(req, targetText, ip, key);
    } catch (error) {
      return failedAdmission(key, error);
    }
    if (!(verdict instanceof Promise)) {
      return admitted('verdict' in verdict ? verdict : verdictOf(verdict), targetText, ip, key);
    }
    return verdict.then(
      (v) => admitted('verdict' in v ? v : verdictOf(v), targetText, ip, key),
      (error: unknown) => failedAdmission(key, error),
    );
  }

  /** The admission of a decided request whose client holds a slot (given back here when it is refused). */
  function admitted(verdict: Verdict, target: string, ip: string, key: string): Admission {
    let refused: GatewayAnswer | undefined;
    try {
      refused = refusal(verdict);
    } catch (error) {
      return failedAdmission(key, error);
    }
    if (refused !== undefined) {
      slots.release(key);
      return { ok: false, answer: refused };
    }
    return { ok: true, target, ip, headers: verdict.headers, key };
  }

  function failedAdmission(key: string, error: unknown): Admission {
    slots.release(key);
    return { ok: false, answer: failure(error) };
  }

  /** Proxies an admitted request, or answers for the gateway. */
  function serve(req: IncomingMessage, res: ServerResponse, admission: Admission): void {
    if (admission.ok) {
      // The client may have gone while the decision was pending (a Redis round trip): its response's
      // 'close' has fired already and would never give the slot back — 64 such requests and the client
      // address was refused for good. Nothing to proxy: give the slot back now.
      if (res.closed || res.destroyed) {
        slots.release(admission.key);
        return;
      }
      proxy(req, res, admission);
      return;
    }
    req.resume();
    answer(res, admission.answer);
  }

  /** Tunnels an admitted upgrade, or refuses it. */
  function serveUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, admission: Admission): void {
    if (!admission.ok) {
      metrics.gateway(admission.answer.status);
      rejectUpgrade(socket, admission.answer);
      return;
    }
    const key = admission.key;
    proxyUpgrade({
      req,
      socket,
      head,
      upstream,
      path: basePath + admission.target,
      headers: upstreamHeaders(req, admission.ip, options.trustsPeer(req), upstream.host),
      extra: admission.headers,
      timeoutMs: limits.upstreamTimeoutMs,
      release: () => slots.release(key),
      metrics,
      logger,
    });
  }

  const server = createServer(
    {
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
      requestTimeout: limits.requestTimeoutMs,
      // How often Node looks for requests past those timeouts (its default, 30 s, would let them overrun).
      connectionsCheckingInterval: Math.max(250, Math.min(1000, limits.headersTimeoutMs / 4)),
    },
    (req, res) => {
      const admitted = admit(req);
      if (!(admitted instanceof Promise)) {
        serve(req, res, admitted);
        return;
      }
      admitted.then(
        (a) => serve(req, res, a),
        (error: unknown) => {
          req.resume();
          answer(res, failure(error));
        },
      );
    },
  );
  // Upgraded sockets leave the HTTP server's own bookkeeping: `closeAllConnections()` never reaches them,
  // yet `close()` waits for them. Track them here so shutdown can cut them at its grace deadline.
  const tunnels = new Set<Duplex>();
  const closeAllConnections = server.closeAllConnections;
  server.closeAllConnections = function closeAllWithTunnels(this: Server) {
    closeAllConnections.call(this);
    for (const socket of tunnels) socket.destroy();
  };
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {});
    tunnels.add(socket);
    socket.once('close', () => tunnels.delete(socket));
    // Only websocket is tunnelled: after an `h2c` switch every request on the tunnel would reach the
    // upstream without a decision.
    if (!isWebsocketUpgrade(req)) {
      metrics.gateway(400);
      rejectUpgrade(
        socket,
        errorAnswer(400, 'ERR_SLUICE_UPGRADE_REFUSED', 'only websocket upgrades are tunnelled (Upgrade: websocket)'),
      );
      return;
    }
    const admitted = admit(req);
    if (!(admitted instanceof Promise)) {
      serveUpgrade(req, socket, head, admitted);
      return;
    }
    admitted.then(
      (a) => serveUpgrade(req, socket, head, a),
      (error: unknown) => rejectUpgrade(socket, failure(error)),
    );
  });
  server.on('close', () => {
    agent.destroy();
    context.deadlines.close();
  });
  // A connection that says nothing for this long is closed (Node's default is never).
  server.timeout = limits.idleTimeoutMs;
  server.keepAliveTimeout = 5_000;
  return server;
}

/** `Upgrade: websocket`, alone: a list that offers another protocol too is refused as a whole. */
function isWebsocketUpgrade(req: IncomingMessage): boolean {
  return (
    String(req.headers.upgrade ?? '')
      .trim()
      .toLowerCase() === 'websocket'
  );
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
