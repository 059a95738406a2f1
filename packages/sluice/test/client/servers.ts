/**
 * HTTP servers for the client tests, on port 0: one limited by sluice's node:http middleware on an
 * injected clock, and one that plays a script of responses, for header forms sluice itself does not
 * send (an HTTP date in Retry-After, GitHub's epoch X-RateLimit-Reset, …).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rateLimit } from '../../src/adapters/node.js';
import type { Clock } from '../../src/core/clock.js';
import type { AlgorithmName } from '../../src/core/policy.js';
import type { HeaderMode } from '../../src/http/headers.js';

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
      const arrival = { atMs, method: req.method ?? '', body, status: 0 };
      // In arrival order; the status is filled in when the answer is sent (the middleware may be async).
      arrivals.push(arrival);
      res.on('finish', () => {
        arrival.status = res.statusCode;
      });
      answer(req, res, body);
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
  /** Which rate-limit headers the middleware sends. @default 'both' */
  readonly headers?: HeaderMode;
  /** Take `Retry-After` off the 429, so the client must read the other headers. @default false */
  readonly withoutRetryAfter?: boolean;
}

/**
 * A `node:http` server behind sluice's own middleware (`sluice/node`), keyed by client IP, on the
 * injected clock: the headers and 429 body are exactly what sluice sends (SPEC §4).
 */
export function startLimitedServer(options: LimitedServerOptions): Promise<TestServer> {
  const limited = rateLimit({
    algorithm: options.algorithm ?? 'fixed-window',
    limit: options.limit,
    period: options.periodMs,
    ...(options.burst === undefined ? {} : { burst: options.burst }),
    ...(options.headers === undefined ? {} : { headers: options.headers }),
    clock: options.clock,
    ...(options.withoutRetryAfter
      ? {
          handler: (_req: IncomingMessage, res: ServerResponse) => {
            res.removeHeader('Retry-After');
            res.statusCode = 429;
            res.end();
          },
        }
      : {}),
  })((_req, res) => res.end('ok'));
  return listen(options.clock, (req, res) => limited(req, res), []);
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
