/**
 * The gateway in front of an LLM API (`llm:` rules): each request reserves its estimated tokens under its
 * hashed API key, is forwarded, and its response streams back byte for byte while its usage is read; the
 * reservation is settled before the response's end is passed on — with the reported usage, or without it
 * with what passed, or for a stream cut before its end with its reserved output (gateway-llm-usage.ts).
 */
import type { Agent, ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import { isSluiceError } from 'sluice';
import { createUsageTap, type TokenReservation, type UsageTap } from 'sluice/llm';
import { type DecisionHub, outcomeOf } from '../../observability/decision-events.js';
import type { LlmMetrics } from '../../observability/llm-metrics.js';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import type { ClientSlots } from './client-slots.js';
import { type UpstreamTarget, upstreamTarget } from './exchange.js';
import { forwardableRaw, upstreamHeaderList } from './forwarding.js';
import type { Admitted } from './gateway-admission.js';
import { errorAnswer, failureAnswer, type GatewayAnswer } from './gateway-answer.js';
import { type LlmBudget, llmKeyOf } from './gateway-llm-budget.js';
import { type OwingReservation, reserveOwing } from './gateway-llm-debt.js';
import { type LlmRequest, llmRequestOf, readLlmBody } from './gateway-llm-request.js';
import { usageToSettle } from './gateway-llm-usage.js';

/** What the LLM proxy needs from its gateway. */
export interface LlmProxyOptions {
  readonly upstream: URL;
  readonly agent: Agent;
  readonly slots: ClientSlots;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  readonly upstreamTimeoutMs: number;
  readonly llmMetrics: LlmMetrics;
  /** Where each reservation's decision per limit is published (the dashboard's keys: tokens beside requests). */
  readonly hub?: DecisionHub;
  answer(res: ServerResponse, a: GatewayAnswer): void;
  trustsPeer(req: IncomingMessage): boolean;
}

/** Proxies an admitted request under `budget`; the client's slot is given back when its response closes. */
export type LlmProxy = (req: IncomingMessage, res: ServerResponse, admitted: Admitted, budget: LlmBudget) => void;

/** Creates the LLM proxy of a gateway. */
export function createLlmProxy(options: LlmProxyOptions): LlmProxy {
  const target = upstreamTarget(options.upstream, options.agent);
  return (req, res, admitted, budget) => {
    res.once('close', () => options.slots.release(admitted.key));
    reserveAndForward(options, target, { req, res, admitted, budget }).catch((error: unknown) => {
      options.answer(res, failureAnswer(error, options.logger));
    });
  };
}

interface Call {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly admitted: Admitted;
  readonly budget: LlmBudget;
}

async function reserveAndForward(options: LlmProxyOptions, target: UpstreamTarget, call: Call): Promise<void> {
  const { req, res, budget } = call;
  const key = llmKeyOf(req, budget.keyHeader);
  if (key === undefined) {
    req.resume();
    const why = `send the API key in the ${budget.keyHeader} header: token budgets are kept per key`;
    options.answer(res, errorAnswer(401, 'ERR_SLUICE_LLM_KEY_MISSING', why));
    return;
  }
  let body: Buffer;
  try {
    body = await readLlmBody(req);
  } catch (error) {
    if (isSluiceError(error) && error.code === 'ERR_SLUICE_BODY_TOO_LARGE') {
      options.answer(res, errorAnswer(413, error.code, error.message, { connection: 'close' }));
      req.socket.destroySoon();
    }
    return;
  }
  const request = llmRequestOf(body);
  // The key's debt (extras earlier settles could not take) rides on this reservation.
  const owing = await reserveOwing(budget.limiter, budget.debts, key, request);
  const reservation = owing.reservation;
  if (options.hub !== undefined) publish(options.hub, key, reservation);
  const headers = { ...call.admitted.headers, ...budget.limiter.headers(reservation.decision) };
  if (!reservation.allowed) {
    options.llmMetrics.settled('refused');
    const retry = Math.max(1, Math.ceil(reservation.decision.retryAfterMs / 1000));
    const wait = Number.isFinite(retry) ? String(retry) : '3600';
    const message = "this key's token or request budget is spent for now; retry after the reset";
    options.answer(res, errorAnswer(429, 'ERR_SLUICE_LLM_BUDGET', message, { ...headers, 'retry-after': wait }));
    return;
  }
  if (res.destroyed) {
    options.llmMetrics.settled('cancelled');
    await owing.cancel();
    return;
  }
  forward(options, target, call, { request, reservation: owing, headers });
}

/** One decision event per limit of a reservation, under the hashed key: `llm:requests`, `llm:totalTokens`, ... */
function publish(hub: DecisionHub, key: string, reservation: TokenReservation): void {
  const atMs = Date.now();
  for (const { name, decision: d } of reservation.decision.results ?? []) {
    const outcome = outcomeOf(d.allowed, d.limit, d.remaining);
    hub.emit({ source: 'gateway', domain: 'llm', rule: `llm:${name}`, key, outcome, ...limitOf(d), atMs });
  }
}

const limitOf = (d: { limit: number; remaining: number; resetMs: number }) => ({
  limit: d.limit,
  remaining: d.remaining,
  resetMs: d.resetMs,
});

interface Reserved {
  readonly request: LlmRequest;
  readonly reservation: OwingReservation;
  readonly headers: Record<string, string>;
}

/** Sends the request upstream and streams the answer back, settling once at its end. */
function forward(options: LlmProxyOptions, target: UpstreamTarget, call: Call, reserved: Reserved): void {
  const { req, res, admitted, budget } = call;
  const list = upstreamHeaderList(req, admitted.ip, options.trustsPeer(req), target.host);
  // The body goes as one piece, read already: its length replaces however the client framed it.
  const headers = dropNamesOf(list, ['content-length', 'transfer-encoding']);
  headers.push('content-length', String(reserved.request.body.length));
  const outgoing = target.send({
    hostname: target.hostname,
    port: target.port,
    method: req.method,
    path: target.basePath + admitted.target,
    headers,
    servername: target.servername,
    agent: target.agent,
  });
  const ending = createEnding(options, reserved, res, outgoing);
  // Covers waiting for the answer and, after it, a stream that goes silent (a stalled upstream).
  outgoing.setTimeout(options.upstreamTimeoutMs, () => {
    if (!res.headersSent) {
      const message = `the upstream did not answer within ${options.upstreamTimeoutMs} ms`;
      options.answer(res, errorAnswer(504, 'ERR_SLUICE_UPSTREAM_TIMEOUT', message, reserved.headers));
    }
    outgoing.destroy();
  });
  outgoing.on('error', (error) => {
    if (!res.headersSent && !res.destroyed) {
      options.logger.warn({ err: error.message, upstream: options.upstream.origin }, 'upstream unavailable');
      const message = 'the upstream could not be reached';
      options.answer(res, errorAnswer(502, 'ERR_SLUICE_UPSTREAM_UNAVAILABLE', message, reserved.headers));
    }
    ending.cut();
  });
  outgoing.on('response', (incoming) => ending.respond(incoming, budget));
  res.on('close', () => {
    if (!res.writableFinished) {
      outgoing.destroy();
      ending.cut();
    }
  });
  outgoing.end(reserved.request.body);
}

/** A flat [name, value, ...] list without the named headers. */
function dropNamesOf(list: readonly string[], names: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < list.length; i += 2) {
    if (!names.includes(list[i] as string)) out.push(list[i] as string, list[i + 1] as string);
  }
  return out;
}

/** How one exchange ends: the response streamed with its usage read, and the reservation settled once. */
function createEnding(options: LlmProxyOptions, reserved: Reserved, res: ServerResponse, outgoing: ClientRequest) {
  let tap: UsageTap | undefined;
  let status = 0;
  let done = false;
  let sent = false;
  outgoing.once('finish', () => {
    sent = true;
  });
  const settle = async (ended: boolean) => {
    if (done) return;
    done = true;
    const reading = tap?.end();
    const usage = usageToSettle(reading, reserved.request, { status, ended, sent });
    options.llmMetrics.settled(usage === undefined ? 'cancelled' : reading?.usage === undefined ? 'estimate' : 'usage');
    try {
      const result =
        usage === undefined ? await reserved.reservation.cancel() : await reserved.reservation.settle(usage);
      // A refused settle leaves the reservation to lapse, charged in full: say so rather than count it settled.
      if (!result.ok) options.logger.warn({ code: result.code, reason: result.message }, 'llm settle refused');
    } catch (error) {
      // The reservation lapses charged in full: nothing is given away when the store fails here.
      options.logger.warn({ err: String(error) }, 'llm settle failed');
    }
    if (ended) res.end();
    else res.destroy();
  };
  return {
    respond(incoming: IncomingMessage, budget: LlmBudget) {
      status = incoming.statusCode ?? 502;
      if (res.headersSent || res.destroyed) {
        incoming.destroy();
        void settle(false);
        return;
      }
      const usageTap = createUsageTap({ provider: budget.provider });
      tap = usageTap;
      res.writeHead(status, forwardableRaw(incoming.rawHeaders, reserved.headers));
      options.metrics.gateway(status);
      // One listener forwards and reads each chunk (not a pipe beside a reader: one dispatch a chunk), and
      // the chunk is written before it is read, so reading its usage never delays the bytes.
      incoming.on('data', (chunk: Buffer) => {
        if (!res.write(chunk)) incoming.pause();
        usageTap.push(chunk);
      });
      res.on('drain', () => incoming.resume());
      incoming.on('end', () => void settle(true));
      incoming.on('error', () => void settle(false));
      incoming.on('close', () => {
        if (!incoming.complete) void settle(false);
      });
    },
    cut() {
      outgoing.destroy();
      void settle(false);
    },
  };
}
