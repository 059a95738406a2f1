import {
  createServer,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import type { Decision } from 'sluice';
import { combineDecisions, isSluiceError } from 'sluice';
import type { RulesEngine } from 'sluice/rules';
import { httpDescriptorsFor, normalizePath } from 'sluice/rules';
import type { AccessLists } from './access-lists.js';
import type { Decided, Decider } from './decide.js';
import { isStoreError } from './decide.js';
import { assertRequestLengths } from './envoy-codec.js';
import { createClientSlots } from './gateway/client-slots.js';
import { forwardable, upstreamHeaders } from './gateway/forwarding.js';
import { proxyUpgrade, rejectUpgrade } from './gateway/upgrade.js';
import { rejectionBody } from './headers.js';
import type { Logger } from './logger.js';
import type { ServiceMetrics } from './metrics.js';

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

/** Whether a request may go on: where to, for whom, and the headers to add — or what to answer instead. */
type Admission =
  | { ok: true; target: string; ip: string; headers: Record<string, string>; release: () => void }
  | { ok: false; answer: GatewayAnswer };

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
 * (and other) upgrades are rate limited the same way and then tunnelled.
 *
 * The path is normalised before the rules see it and before it is forwarded (`normalizePath`), so a
 * rule on `/login` also covers `//login`, `/a/../login` and `/%6Cogin`; a malformed escape is a 400.
 */
export function createGateway(options: GatewayOptions): Server {
  const { upstream, engine, decider, lists, metrics, logger } = options;
  const limits: GatewayLimits = { ...DEFAULT_GATEWAY_LIMITS, ...options.limits };
  const secure = upstream.protocol === 'https:';
  const agentOptions = { keepAlive: true, maxSockets: limits.maxUpstreamSockets, timeout: limits.idleTimeoutMs };
  const agent = secure ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
  const send = secure ? httpsRequest : httpRequest;
  const basePath = upstream.pathname.replace(/\/$/, '');
  // Read once: URL getters are not free, and these run for every request.
  const upstreamHostname = upstream.hostname.replace(/^\[|\]$/g, '');
  const upstreamPort = upstream.port || (secure ? 443 : 80);
  const upstreamProtocol = upstream.protocol;
  const upstreamHost = upstream.host;
  const slots = createClientSlots(limits.maxClientInFlight);

  function answer(res: ServerResponse, a: GatewayAnswer): void {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(a.status, {
      ...a.headers,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(a.body),
    });
    res.end(a.body);
    metrics.gateway(a.status);
  }

  /**
   * The verdict on a request: at once when no decision is needed (a list entry, no `http:` rule
   * matched), else once the decider has answered. Plain promise steps, not async functions: this runs
   * for every request.
   */
  function decide(req: IncomingMessage, path: string, ip: string, key: string): Verdict | Promise<Verdict> {
    const list = lists.match('', 'remote_address', ip);
    if (list === 'deny') return { verdict: 'denied', headers: {} };
    if (list === 'allow') return { verdict: 'pass', headers: {} };
    const groups = httpDescriptorsFor(engine.ruleSet, {
      method: req.method ?? 'GET',
      path,
      headers: req.headers,
      remoteAddress: key,
    });
    if (groups.length === 0) return { verdict: 'pass', headers: {} };
    if (groups.length === 1) {
      const { domain, descriptors } = groups[0] as (typeof groups)[number];
      const request = { domain, descriptors };
      assertRequestLengths(request);
      return decider.decide(request, 'gateway').then(verdictOf);
    }
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
  async function decideGroups(groups: ReturnType<typeof httpDescriptorsFor>): Promise<Verdict> {
    const answers: Decided[] = [];
    for (const { domain, descriptors } of groups) {
      const request = { domain, descriptors };
      assertRequestLengths(request);
      answers.push(await decider.decide(request, 'gateway'));
    }
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

  /** The request's target path, normalised; undefined when it is not an origin-form path with valid escapes. */
  function targetOf(req: IncomingMessage): { path: string; query: string } | undefined {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = normalizePath(q === -1 ? url : url.slice(0, q));
    return path === undefined ? undefined : { path, query: q === -1 ? '' : url.slice(q) };
  }

  function proxy(
    req: IncomingMessage,
    res: ServerResponse,
    target: string,
    ip: string,
    extra: Record<string, string>,
    release: () => void,
  ): void {
    const outgoing = send({
      protocol: upstreamProtocol,
      hostname: upstreamHostname,
      port: upstreamPort,
      method: req.method,
      path: basePath + target,
      headers: upstreamHeaders(req, ip, options.trustsPeer(req), upstreamHost),
      agent,
    });
    // Once the whole request is sent, the upstream has this long to start answering. (While the body is
    // still coming in, the request timeout is the bound; a request waiting for a pooled socket is not
    // sent, and so is bounded by it too.)
    let deadline: NodeJS.Timeout | undefined;
    const startDeadline = () => {
      deadline = setTimeout(onDeadline, limits.upstreamTimeoutMs);
    };
    const onDeadline = () => {
      logger.warn({ upstream: upstream.origin, timeoutMs: limits.upstreamTimeoutMs }, 'upstream timed out');
      answer(
        res,
        errorAnswer(
          504,
          'ERR_SLUICE_UPSTREAM_TIMEOUT',
          `the upstream did not answer within ${limits.upstreamTimeoutMs} ms`,
          extra,
        ),
      );
      outgoing.destroy();
    };
    // on(), not once(), for events that fire once anyway: no wrapper per request.
    outgoing.on('finish', startDeadline);
    // The client's slot is held until both its connection and the upstream request are done.
    let open = 2;
    const done = () => {
      if (--open === 0) release();
    };
    outgoing.on('close', done);
    res.on('close', () => {
      clearTimeout(deadline);
      done();
      // The client went away before the upstream finished: stop the upstream request too.
      if (!res.writableFinished) outgoing.destroy();
    });
    outgoing.on('response', (incoming) => {
      clearTimeout(deadline);
      if (res.headersSent || res.destroyed) {
        incoming.destroy();
        return;
      }
      const out = forwardable(incoming.headers) as Record<string, string | string[]>;
      for (const name in extra) out[name] = extra[name] as string;
      res.writeHead(incoming.statusCode ?? 502, out);
      metrics.gateway(incoming.statusCode ?? 502);
      // pipe() rather than stream.pipeline(): on Node 20 pipeline() builds an AbortSignal and, when the
      // streams finish, a DOMException per call — ~10% of the gateway's CPU per proxied request. The
      // failures pipeline() would handle are handled here: a broken upstream response ends the client's.
      incoming.pipe(res);
      incoming.on('error', () => res.destroy());
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error('upstream idle')));
    outgoing.on('error', (error) => {
      clearTimeout(deadline);
      if (!res.headersSent) {
        logger.warn({ err: error.message, upstream: upstream.origin }, 'upstream unavailable');
        answer(res, errorAnswer(502, 'ERR_SLUICE_UPSTREAM_UNAVAILABLE', 'the upstream could not be reached', extra));
      } else {
        res.destroy(error);
      }
    });
    req.pipe(outgoing);
    req.on('error', () => outgoing.destroy());
  }

  /**
   * The checks every request goes through before it is proxied or tunnelled, in order: at once when no
   * decision is needed, else a promise.
   */
  function admit(req: IncomingMessage): Admission | Promise<Admission> {
    const target = targetOf(req);
    if (target === undefined) {
      return {
        ok: false,
        answer: errorAnswer(400, 'ERR_SLUICE_BAD_PATH', 'the request path is not a valid origin-form path'),
      };
    }
    const ip = options.clientIp(req);
    const key = options.clientKey(ip);
    const release = slots.acquire(key);
    if (release === undefined) {
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
    const admitted = (verdict: Verdict): Admission => {
      let refused: GatewayAnswer | undefined;
      try {
        refused = refusal(verdict);
      } catch (error) {
        return failed(error);
      }
      if (refused !== undefined) {
        release();
        return { ok: false, answer: refused };
      }
      return { ok: true, target: target.path + target.query, ip, headers: verdict.headers, release };
    };
    const failed = (error: unknown): Admission => {
      release();
      return { ok: false, answer: failure(error) };
    };
    let verdict: Verdict | Promise<Verdict>;
    try {
      verdict = decide(req, target.path, ip, key);
    } catch (error) {
      return failed(error);
    }
    return verdict instanceof Promise ? verdict.then(admitted, failed) : admitted(verdict);
  }

  /** Proxies an admitted request, or answers for the gateway. */
  function serve(req: IncomingMessage, res: ServerResponse, admitted: Admission): void {
    if (admitted.ok) {
      // The client may have gone while the decision was pending (a Redis round trip): its response's
      // 'close' has fired already and would never give the slot back — 64 such requests and the client
      // address was refused for good. Nothing to proxy: give the slot back now.
      if (res.closed || res.destroyed) {
        admitted.release();
        return;
      }
      proxy(req, res, admitted.target, admitted.ip, admitted.headers, admitted.release);
      return;
    }
    req.resume();
    answer(res, admitted.answer);
  }

  /** Tunnels an admitted upgrade, or refuses it. */
  function serveUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, admitted: Admission): void {
    if (!admitted.ok) {
      metrics.gateway(admitted.answer.status);
      rejectUpgrade(socket, admitted.answer);
      return;
    }
    proxyUpgrade({
      req,
      socket,
      head,
      upstream,
      path: basePath + admitted.target,
      headers: upstreamHeaders(req, admitted.ip, options.trustsPeer(req), upstream.host),
      extra: admitted.headers,
      timeoutMs: limits.upstreamTimeoutMs,
      release: admitted.release,
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
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {});
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
  server.on('close', () => agent.destroy());
  // A connection that says nothing for this long is closed (Node's default is never).
  server.timeout = limits.idleTimeoutMs;
  server.keepAliveTimeout = 5_000;
  return server;
}
