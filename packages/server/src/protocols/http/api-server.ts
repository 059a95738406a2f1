/**
 * The HTTP API server: routes (/json, /v1/check, health, metrics, admin, dashboard), body limits and errors as JSON.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isSluiceError } from 'sluice';
import { acceptsProblem } from 'sluice/http';
import type { Decider } from '../../core/decide.js';
import { isStoreError } from '../../core/decide.js';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { requestFromMessage, responseToJson } from '../../rls/codec.js';
import type { CheckApi } from './check-api.js';
import { problemOf, sendProblem } from './problem-answer.js';
import { HttpError, readJson, sendError, sendJson } from './respond.js';

/** A handler for an extra route (`/api/...` for the dashboard). It answers, or throws an HttpError. */
export type RouteHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => void | Promise<void>;

/** What the HTTP API serves. */
export interface ApiServerOptions {
  decider: Decider;
  checkApi: CheckApi;
  metrics: ServiceMetrics;
  logger: Logger;
  maxBodyBytes: number;
  /** `GET /healthcheck`: the status and body to answer with. */
  health(): Promise<{ status: number; body: unknown }>;
  /** The admin API (`/admin/...`); answers the status it wrote. */
  admin(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<number>;
  /** Extra exact-path routes, e.g. the dashboard's `/api/...` endpoints. */
  routes: ReadonlyMap<string, RouteHandler>;
  /** Static files (the dashboard at `/`); false when there is no such file. */
  staticFiles?: (req: IncomingMessage, res: ServerResponse, pathname: string) => boolean;
}

/**
 * Creates the HTTP API server (not yet listening): `POST /json`, `POST /v1/check`, `GET /healthcheck`,
 * `GET /metrics`, `/admin/...`, extra `/api/...` routes and the dashboard's static files. Every error is
 * a JSON body `{"error":{"code","message"}}`; nothing a client sends can crash it.
 */
export function createApiServer(options: ApiServerOptions): Server {
  const { decider, checkApi, metrics, logger, maxBodyBytes } = options;

  async function route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<string> {
    const { pathname } = url;
    const method = req.method ?? 'GET';
    switch (pathname) {
      case '/json': {
        only(method, 'POST');
        const body = await readJson(req, maxBodyBytes);
        const request = requestFromMessage(body);
        const decided = await decider.decide(request, 'json', req.headers);
        if (decided.overallCode === 'OVER_LIMIT' && acceptsProblem(req.headers.accept)) {
          sendProblem(res, problemOf(decided, decided.binding), decided.headers);
          return 'json';
        }
        sendJson(res, decided.overallCode === 'OVER_LIMIT' ? 429 : 200, responseToJson(decided), decided.headers);
        return 'json';
      }
      case '/v1/check': {
        only(method, 'POST');
        const body = await readJson(req, maxBodyBytes);
        sendJson(res, 200, await checkApi.check(body));
        return 'check';
      }
      case '/healthcheck': {
        only(method, 'GET', 'HEAD');
        const health = await options.health();
        sendJson(res, health.status, health.body);
        return 'healthcheck';
      }
      case '/metrics': {
        only(method, 'GET');
        const text = await metrics.render();
        res.writeHead(200, { 'content-type': metrics.contentType, 'content-length': Buffer.byteLength(text) });
        res.end(text);
        return 'metrics';
      }
    }
    if (pathname === '/admin' || pathname.startsWith('/admin/')) {
      await options.admin(req, res, pathname);
      return 'admin';
    }
    const extra = options.routes.get(pathname);
    if (extra !== undefined) {
      await extra(req, res, url);
      return pathname.startsWith('/api/') ? 'api' : 'other';
    }
    if (options.staticFiles?.(req, res, pathname)) return 'static';
    if (pathname === '/' && (method === 'GET' || method === 'HEAD')) {
      sendJson(res, 200, {
        service: 'sluice',
        endpoints: [
          'POST /json',
          'POST /v1/check',
          'GET /healthcheck',
          'GET /metrics',
          '/admin/...',
          '/api/rules',
          '/api/status',
        ],
      });
      return 'index';
    }
    throw new HttpError(404, 'ERR_SLUICE_NOT_FOUND', `no endpoint at ${method} ${pathname}`);
  }

  const server = createServer((req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://sluice.invalid');
    } catch {
      url = new URL('http://sluice.invalid/');
    }
    route(req, res, url).then(
      (name) => metrics.http(name, res.statusCode),
      (error: unknown) => {
        const httpError = toHttpError(error);
        if (httpError.status >= 500 && httpError.status !== 503)
          logger.error({ err: error, path: url.pathname }, 'request failed');
        if (!res.headersSent) sendError(res, httpError);
        else res.destroy();
        metrics.http(routeName(url.pathname), httpError.status);
      },
    );
  });
  // A slow or stuck client must not hold a connection (and a shutdown) forever.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  return server;
}

function only(method: string, ...methods: string[]): void {
  if (!methods.includes(method)) {
    throw new HttpError(405, 'ERR_SLUICE_METHOD_NOT_ALLOWED', `use ${methods.join(' or ')}`);
  }
}

function routeName(pathname: string): string {
  if (pathname === '/json') return 'json';
  if (pathname === '/v1/check') return 'check';
  if (pathname.startsWith('/admin')) return 'admin';
  if (pathname.startsWith('/api/')) return 'api';
  return 'other';
}

/** Maps anything thrown while answering to an HttpError: bad input 400, store down 503, else 500. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (isSluiceError(error)) {
    if (error.code.startsWith('ERR_SLUICE_REQUEST_') || error.code === 'ERR_SLUICE_TOO_MANY_ITEMS') {
      return new HttpError(400, error.code, error.message);
    }
    if (isStoreError(error)) return new HttpError(503, error.code, `the store is unavailable: ${error.message}`);
  }
  return new HttpError(500, 'ERR_SLUICE_INTERNAL', 'internal error');
}
