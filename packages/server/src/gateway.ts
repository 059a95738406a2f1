import {
  createServer,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Decision } from 'sluice';
import { combineDecisions } from 'sluice';
import type { RulesEngine } from 'sluice/rules';
import { httpDescriptorsFor } from 'sluice/rules';
import type { AccessLists } from './access-lists.js';
import type { Decided, Decider } from './decide.js';
import { isStoreError } from './decide.js';
import { rejectionBody } from './headers.js';
import type { Logger } from './logger.js';
import type { ServiceMetrics } from './metrics.js';

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
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) are the proxy's own business and never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  const connection = headers.connection;
  // Most requests name no header in Connection beyond keep-alive/close: skip the split then.
  const listed =
    connection === undefined || connection === 'keep-alive' || connection === 'close'
      ? undefined
      : String(connection)
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean);
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || listed?.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/**
 * Creates the gateway (not yet listening): every request is turned into descriptors by the config's
 * `http:` rules, decided, and either answered 429 (403 for a deny-list match) here or reverse-proxied to
 * the upstream with bodies streamed both ways and the rate-limit headers added. The upstream's status
 * and headers are kept; 502 when it cannot be reached.
 */
export function createGateway(options: GatewayOptions): Server {
  const { upstream, engine, decider, lists, metrics, logger } = options;
  const secure = upstream.protocol === 'https:';
  const agent = secure
    ? new HttpsAgent({ keepAlive: true, maxSockets: 256 })
    : new HttpAgent({ keepAlive: true, maxSockets: 256 });
  const send = secure ? httpsRequest : httpRequest;
  const basePath = upstream.pathname.replace(/\/$/, '');

  function answer(res: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
    res.writeHead(status, {
      ...headers,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
    metrics.gateway(status);
  }

  async function decide(
    req: IncomingMessage,
    ip: string,
  ): Promise<{
    verdict: 'pass' | 'limited' | 'denied';
    headers: Record<string, string>;
    binding?: Decision;
    name?: string;
  }> {
    const list = lists.match('', 'remote_address', ip);
    if (list === 'deny') return { verdict: 'denied', headers: {} };
    if (list === 'allow') return { verdict: 'pass', headers: {} };
    const groups = httpDescriptorsFor(engine.ruleSet, {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      remoteAddress: ip,
    });
    if (groups.length === 0) return { verdict: 'pass', headers: {} };
    const answers: Decided[] = [];
    for (const { domain, descriptors } of groups) {
      answers.push(await decider.decide({ domain, descriptors }, 'gateway'));
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

  function proxy(req: IncomingMessage, res: ServerResponse, ip: string, extra: Record<string, string>): void {
    const headers = forwardable(req.headers);
    const prior = req.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = prior
      ? `${Array.isArray(prior) ? prior.join(', ') : prior}, ${req.socket.remoteAddress ?? ip}`
      : (req.socket.remoteAddress ?? ip);
    headers['x-forwarded-host'] = req.headers.host ?? '';
    headers['x-forwarded-proto'] = 'http';
    headers.host = upstream.host;
    const path = req.url?.startsWith('/') ? req.url : `/${req.url ?? ''}`;
    const outgoing = send({
      protocol: upstream.protocol,
      hostname: upstream.hostname.replace(/^\[|\]$/g, ''),
      port: upstream.port || (secure ? 443 : 80),
      method: req.method,
      path: basePath + path,
      headers,
      agent,
    });
    outgoing.on('response', (incoming) => {
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
    outgoing.on('error', (error) => {
      if (!res.headersSent) {
        logger.warn({ err: error.message, upstream: upstream.origin }, 'upstream unavailable');
        answer(
          res,
          502,
          extra,
          JSON.stringify({
            error: { code: 'ERR_SLUICE_UPSTREAM_UNAVAILABLE', message: 'the upstream could not be reached' },
          }),
        );
      } else {
        res.destroy(error);
      }
    });
    // The client went away before the upstream finished: stop the upstream request too.
    res.on('close', () => {
      if (!res.writableFinished) outgoing.destroy();
    });
    req.pipe(outgoing);
    req.on('error', () => outgoing.destroy());
  }

  const server = createServer((req, res) => {
    const ip = options.clientIp(req);
    decide(req, ip).then(
      ({ verdict, headers, binding }) => {
        if (verdict === 'pass') {
          proxy(req, res, ip, headers);
          return;
        }
        req.resume();
        const rejection = rejectionBody(verdict, binding);
        answer(res, rejection.status, headers, rejection.body);
      },
      (error: unknown) => {
        req.resume();
        if (isStoreError(error)) {
          const rejection = rejectionBody('unavailable', undefined);
          answer(res, rejection.status, { 'retry-after': '1' }, rejection.body);
          return;
        }
        logger.error({ err: error }, 'gateway decision failed');
        answer(res, 500, {}, JSON.stringify({ error: { code: 'ERR_SLUICE_INTERNAL', message: 'internal error' } }));
      },
    );
  });
  server.on('close', () => agent.destroy());
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  return server;
}
