/** Listening and draining HTTP servers: bind, and close gracefully (in-flight requests finish, idle connections go). */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServiceMetrics } from '../observability/metrics.js';
import { createDrain } from '../protocols/http/drain.js';

/** Binds `server` to `host:port`; resolves with the bound port. */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** A listening server and how to stop it. */
export interface Listening {
  readonly port: number;
  close(graceMs: number): Promise<void>;
}

/** Listens, and returns a graceful close for it. */
export async function listenDrained(server: Server, port: number, host: string): Promise<Listening> {
  const bound = await listen(server, port, host);
  const drain = createDrain(server);
  return { port: bound, close: (graceMs) => closeServer(server, graceMs, drain) };
}

/**
 * Stops accepting, lets in-flight requests finish, then closes. Idle keep-alive connections are closed
 * as they become idle (a client holding one open must not delay the exit); after `graceMs` whatever is
 * left is cut.
 */
function closeServer(server: Server, graceMs: number, drain: ReturnType<typeof createDrain>): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    // Answers from now on say `Connection: close`, so keep-alive clients do not reuse a closing connection.
    drain.start();
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const cut = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(cut);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** A listener that answers the Prometheus text on `path` and 404 elsewhere. */
export function createMetricsServer(metrics: ServiceMetrics, path: string): Server {
  return createServer((req, res) => {
    if (req.method !== 'GET' || new URL(req.url ?? '/', 'http://x').pathname !== path) {
      res.writeHead(404).end();
      return;
    }
    metrics.render().then(
      (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
}
