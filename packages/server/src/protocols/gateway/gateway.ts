/**
 * The gateway: an HTTP server that admits each request (target, in-flight slot, the `http:` rules'
 * decision) and then reverse-proxies it, or tunnels a websocket upgrade, or answers for itself.
 */
import { type Agent, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Clock, Store } from 'sluice';
import type { RulesEngine } from 'sluice/rules';
import type { AccessLists } from '../../core/access-lists.js';
import type { Decider } from '../../core/decide.js';
import type { DecisionHub } from '../../observability/decision-events.js';
import { registerLlmMetrics } from '../../observability/llm-metrics.js';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { sendProblem } from '../http/problem-answer.js';
import { sendJsonText } from '../http/respond.js';
import type { GatewayAdaptive } from './adaptive-limit.js';
import { type ClientSlots, createClientSlots } from './client-slots.js';
import { createProxy } from './exchange.js';
import { upstreamHeaders } from './forwarding.js';
import { type Admission, createAdmission } from './gateway-admission.js';
import { errorAnswer, failureAnswer, type GatewayAnswer } from './gateway-answer.js';
import { createRequestDecision } from './gateway-decision.js';
import { DEFAULT_GATEWAY_LIMITS, type GatewayLimits } from './gateway-limits.js';
import { createLlmProxy } from './gateway-llm.js';
import { createLlmBudgets } from './gateway-llm-budget.js';
import { takeUpstreamPlace } from './gateway-overload.js';
import { proxyUpgrade, rejectUpgrade } from './upgrade.js';
import { createUpstreamAgent } from './upstream-pool.js';

export type { GatewayAnswer } from './gateway-answer.js';
export { DEFAULT_GATEWAY_LIMITS, type GatewayLimits } from './gateway-limits.js';

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
  /** The upstream's adaptive concurrency limit (`--adaptive`): past it, requests are answered 503. */
  adaptive?: GatewayAdaptive;
  /** Where the rules' `llm:` token budgets count, and their clock; without it an `llm:` section is not applied. */
  llm?: { store: Store; clock: Clock; hub?: DecisionHub };
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
  const limits: GatewayLimits = { ...DEFAULT_GATEWAY_LIMITS, ...options.limits };
  const agent = createUpstreamAgent(
    options.upstream.protocol === 'https:',
    limits.maxUpstreamSockets,
    limits.idleTimeoutMs,
  );
  const slots = createClientSlots(limits.maxClientInFlight);
  const admit = createAdmission({
    ...options,
    decide: createRequestDecision(options.engine, options.decider, options.lists),
    slots,
    maxClientInFlight: limits.maxClientInFlight,
  });
  const answer = answerer(options.metrics);
  const proxies = createProxies(options, { agent, slots, upstreamTimeoutMs: limits.upstreamTimeoutMs, answer });
  const serve = createServe(options, slots, answer, proxies);
  const server = listenerOf(limits, (req, res) => {
    const admitted = admit(req);
    if (!(admitted instanceof Promise)) {
      serve(req, res, admitted);
      return;
    }
    admitted.then(
      (a) => serve(req, res, a),
      (error: unknown) => {
        req.resume();
        answer(res, failureAnswer(error, options.logger));
      },
    );
  });
  tunnelUpgrades(server, options, limits, admit, (key) => slots.release(key));
  server.on('close', () => {
    agent.destroy();
    proxies.close();
  });
  return server;
}

type Answer = (res: ServerResponse, a: GatewayAnswer) => void;

/** Writes the gateway's own answers (a problem document when the client takes one) and counts them. */
function answerer(metrics: ServiceMetrics): Answer {
  return (res, a) => {
    if (res.headersSent || res.destroyed) return;
    if (a.problem) sendProblem(res, a.body, a.headers);
    else sendJsonText(res, a.status, a.body, a.headers);
    metrics.gateway(a.status);
  };
}

/** What both proxies share from their gateway. */
interface Shared {
  readonly agent: Agent;
  readonly slots: ClientSlots;
  readonly upstreamTimeoutMs: number;
  readonly answer: Answer;
}

/** The plain proxy, and the LLM proxy with its budgets when the gateway counts tokens (`llm`). */
function createProxies(options: GatewayOptions, shared: Shared) {
  const llmBudget = options.llm && createLlmBudgets(options.llm.store, options.llm.clock);
  const llmMetrics = llmBudget && registerLlmMetrics(options.metrics.registry, () => llmBudget.outstanding());
  const hub = options.llm?.hub;
  const llmProxy =
    llmMetrics && createLlmProxy({ ...options, ...shared, llmMetrics, ...(hub === undefined ? {} : { hub }) });
  const { proxy, close } = createProxy({ ...options, ...shared });
  return { proxy, close, llmBudget, llmProxy };
}

type Serve = (req: IncomingMessage, res: ServerResponse, admission: Admission) => void;

/** Proxies an admitted request (through the LLM proxy when the rules have an `llm:` section), or answers for the gateway. */
function createServe(
  options: GatewayOptions,
  slots: ClientSlots,
  answer: Answer,
  proxies: ReturnType<typeof createProxies>,
): Serve {
  const { proxy, llmBudget, llmProxy } = proxies;
  return (req, res, admission) => {
    if (!admission.ok) {
      req.resume();
      answer(res, admission.answer);
      return;
    }
    // The client may have gone while the decision was pending (a Redis round trip): its response's
    // 'close' has fired already and would never give the slot back — 64 such requests and the client
    // address was refused for good. Nothing to proxy: give the slot back now.
    if (res.closed || res.destroyed) {
      slots.release(admission.key);
      return;
    }
    const shed =
      options.adaptive && takeUpstreamPlace(options.adaptive, req, res, options.engine.ruleSet, admission.target);
    if (shed === undefined) {
      const budget = llmBudget?.(options.engine.ruleSet);
      if (budget !== undefined && llmProxy !== undefined) llmProxy(req, res, admission, budget);
      else proxy(req, res, admission);
      return;
    }
    slots.release(admission.key);
    req.resume();
    answer(res, shed);
  };
}

/** The HTTP server, with Node's timeouts set from the gateway's limits. */
function listenerOf(limits: GatewayLimits, handle: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const server = createServer(
    {
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
      requestTimeout: limits.requestTimeoutMs,
      // How often Node looks for requests past those timeouts (its default, 30 s, would let them overrun).
      connectionsCheckingInterval: Math.max(250, Math.min(1000, limits.headersTimeoutMs / 4)),
    },
    handle,
  );
  // A connection that says nothing for this long is closed (Node's default is never).
  server.timeout = limits.idleTimeoutMs;
  server.keepAliveTimeout = 5_000;
  return server;
}

/**
 * Websocket upgrades: admitted like requests, then tunnelled to the upstream; other upgrades are refused.
 * Upgraded sockets leave the HTTP server's own bookkeeping (`closeAllConnections()` never reaches them,
 * yet `close()` waits for them), so they are tracked here and shutdown cuts them at its grace deadline.
 */
function tunnelUpgrades(
  server: Server,
  options: GatewayOptions,
  limits: GatewayLimits,
  admit: (req: IncomingMessage) => Admission | Promise<Admission>,
  release: (key: string) => void,
): void {
  const { upstream, metrics, logger } = options;
  const basePath = upstream.pathname.replace(/\/$/, '');
  const tunnels = new Set<Duplex>();
  const closeAllConnections = server.closeAllConnections;
  server.closeAllConnections = function closeAllWithTunnels(this: Server) {
    closeAllConnections.call(this);
    for (const socket of tunnels) socket.destroy();
  };
  const serveUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer, admission: Admission) => {
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
      release: () => release(key),
      metrics,
      logger,
    });
  };
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {});
    tunnels.add(socket);
    socket.once('close', () => tunnels.delete(socket));
    // Only websocket is tunnelled: after an `h2c` switch every request on the tunnel would reach the
    // upstream without a decision.
    if (!isWebsocketUpgrade(req)) {
      metrics.gateway(400);
      const refused = 'only websocket upgrades are tunnelled (Upgrade: websocket)';
      rejectUpgrade(socket, errorAnswer(400, 'ERR_SLUICE_UPGRADE_REFUSED', refused));
      return;
    }
    const admitted = admit(req);
    if (!(admitted instanceof Promise)) {
      serveUpgrade(req, socket, head, admitted);
      return;
    }
    admitted.then(
      (a) => serveUpgrade(req, socket, head, a),
      (error: unknown) => rejectUpgrade(socket, failureAnswer(error, logger)),
    );
  });
}

/** `Upgrade: websocket`, alone: a list that offers another protocol too is refused as a whole. */
function isWebsocketUpgrade(req: IncomingMessage): boolean {
  return (
    String(req.headers.upgrade ?? '')
      .trim()
      .toLowerCase() === 'websocket'
  );
}
