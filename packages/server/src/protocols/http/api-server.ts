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
  const server = createServer((req, res) => {
    const url = requestUrl(req);
    route(options, req, res, url).then(
      (name) => options.metrics.http(name, res.statusCode),
      (error: unknown) => answerError(options, res, url, error),
    );
  });
  // A slow or stuck client must not hold a connection (and a shutdown) forever.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  return server;
}

/** The request's URL; one that does not parse is read as `/`. */
function requestUrl(req: IncomingMessage): URL {
  try {
    return new URL(req.url ?? '/', 'http://sluice.invalid');
  } catch {
    return new URL('http://sluice.invalid/');
  }
}

/** Answers one request; resolves with the route's name for the metrics, or rejects with what went wrong. */
async function route(options: ApiServerOptions, req: IncomingMessage, res: ServerResponse, url: URL): Promise<string> {
  const { pathname } = url;
  const method = req.method ?? 'GET';
  switch (pathname) {
    case '/json':
      return answerJson(options, req, res, method);
    case '/v1/check':
      only(method, 'POST');
      sendJson(res, 200, await options.checkApi.check(await readJson(req, options.maxBodyBytes)));
      return 'check';
    case '/healthcheck': {
      only(method, 'GET', 'HEAD');
      const health = await options.health();
      sendJson(res, health.status, health.body);
      return 'healthcheck';
    }
    case '/metrics':
      only(method, 'GET');
      return answerMetrics(options.metrics, res);
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
    sendJson(res, 200, INDEX);
    return 'index';
  }
  throw new HttpError(404, 'ERR_SLUICE_NOT_FOUND', `no endpoint at ${method} ${pathname}`);
}

/** `POST /json`: envoy ratelimit's JSON request decided; over the limit a 429 (a problem+json when asked for). */
async function answerJson(
  options: ApiServerOptions,
  req: IncomingMessage,
  res: ServerResponse,
  method: string,
): Promise<string> {
  only(method, 'POST');
  const body = await readJson(req, options.maxBodyBytes);
  const decided = await options.decider.decide(requestFromMessage(body), 'json', req.headers);
  if (decided.overallCode === 'OVER_LIMIT' && acceptsProblem(req.headers.accept)) {
    sendProblem(res, problemOf(decided, decided.binding), decided.headers);
    return 'json';
  }
  sendJson(res, decided.overallCode === 'OVER_LIMIT' ? 429 : 200, responseToJson(decided), decided.headers);
  return 'json';
}

/** `GET /metrics`: the Prometheus text. */
async function answerMetrics(metrics: ServiceMetrics, res: ServerResponse): Promise<string> {
  const text = await metrics.render();
  res.writeHead(200, { 'content-type': metrics.contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
  return 'metrics';
}

/** A request that failed: its error as JSON (or the connection cut when the answer had begun), logged when ours. */
function answerError(options: ApiServerOptions, res: ServerResponse, url: URL, error: unknown): void {
  const httpError = toHttpError(error);
  if (httpError.status >= 500 && httpError.status !== 503) {
    options.logger.error({ err: error, path: url.pathname }, 'request failed');
  }
  if (!res.headersSent) sendError(res, httpError);
  else res.destroy();
  options.metrics.http(routeName(url.pathname), httpError.status);
}

/** `GET /`: what this server answers. */
const INDEX = {
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
};

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
