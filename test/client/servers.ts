/**
 * HTTP servers for the client tests, on port 0: one limited by sluice (a limiter on an injected clock,
 * answering with the headers of SPEC §4), and one that plays a script of responses, for header forms
 * sluice itself does not send (an HTTP date in Retry-After, GitHub's epoch X-RateLimit-Reset, …).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../src/core/clock.js';
import type { AlgorithmName } from '../../src/core/policy.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';

/** One request as the server saw it. */
export interface Arrival {
  readonly atMs: number;
  readonly method: string;
  readonly body: string;
  readonly status: number;
}

/** A running test server. */
export interface TestServer {
  readonly url: string;
  readonly arrivals: Arrival[];
  close(): Promise<void>;
}

async function listen(
  clock: Clock,
  answer: (req: IncomingMessage, res: ServerResponse, body: string) => void,
  arrivals: Arrival[],
): Promise<TestServer> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const atMs = clock.now();
      answer(req, res, body);
      arrivals.push({ atMs, method: req.method ?? '', body, status: res.statusCode });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    arrivals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Options of the sluice-limited server. */
export interface LimitedServerOptions {
  readonly clock: Clock;
  readonly limit: number;
  readonly periodMs: number;
  readonly algorithm?: AlgorithmName;
  readonly burst?: number;
}

/**
 * A server limited by a sluice limiter, keyed on nothing (one shared limit), with SPEC §4's headers:
 * X-RateLimit-*, RateLimit-Policy, RateLimit, and Retry-After with the JSON body on a 429.
 */
export function startLimitedServer(options: LimitedServerOptions): Promise<TestServer> {
  const limiter = createLimiter({
    algorithm: options.algorithm ?? 'fixed-window',
    limit: options.limit,
    period: options.periodMs,
    ...(options.burst === undefined ? {} : { burst: options.burst }),
    clock: options.clock,
  });
  const windowS = Math.ceil(options.periodMs / 1000);
  return listen(
    options.clock,
    (_req, res, _body) => {
      const d = limiter.checkSync('all');
      const resetS = Math.ceil(d.resetMs / 1000);
      res.setHeader('X-RateLimit-Limit', String(d.limit));
      res.setHeader('X-RateLimit-Remaining', String(d.remaining));
      res.setHeader('X-RateLimit-Reset', String(resetS));
      res.setHeader('RateLimit-Policy', `"default";q=${d.limit};w=${windowS}`);
      res.setHeader('RateLimit', `"default";r=${d.remaining};t=${resetS}`);
      if (d.allowed) {
        res.end('ok');
        return;
      }
      const retryS = Math.max(1, Math.ceil(d.retryAfterMs / 1000));
      res.statusCode = 429;
      res.setHeader('Retry-After', String(retryS));
      res.setHeader('Content-Type', 'application/json');
      res.end(
        JSON.stringify({ error: { code: 'RATE_LIMIT_EXCEEDED', message: 'Too many requests', retry_after: retryS } }),
      );
    },
    [],
  );
}

/** A scripted response: status and headers; `headers` may be computed from the clock. */
export interface ScriptedResponse {
  readonly status: number;
  readonly headers?: Record<string, string> | ((nowMs: number) => Record<string, string>);
}

/** A server that answers with `script` in order, then 200 forever. */
export function startScriptedServer(clock: Clock, script: readonly ScriptedResponse[]): Promise<TestServer> {
  let next = 0;
  return listen(
    clock,
    (_req, res) => {
      const step = script[next++];
      if (step === undefined) {
        res.end('ok');
        return;
      }
      res.statusCode = step.status;
      const headers = typeof step.headers === 'function' ? step.headers(clock.now()) : (step.headers ?? {});
      for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
      res.end(step.status >= 400 ? 'slow down' : 'ok');
    },
    [],
  );
}
