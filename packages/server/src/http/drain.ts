import type { Server, ServerResponse } from 'node:http';

/** Lets a server tell keep-alive clients, while it shuts down, that the connection ends with this answer. */
export interface Drain {
  /** From now on every answer (and every answer not yet started) carries `Connection: close`. */
  start(): void;
}

/**
 * Tracks a server's unanswered requests so that shutdown can mark their answers `Connection: close`:
 * a keep-alive client then opens a new connection (to another instance) for its next request instead of
 * reusing one the server is about to close, which it would see as ECONNRESET.
 */
export function createDrain(server: Server): Drain {
  let draining = false;
  const pending = new Set<ServerResponse>();
  // One listener for every response ('close' always follows 'finish'): no closure per request.
  function forget(this: ServerResponse): void {
    pending.delete(this);
  }
  server.prependListener('request', (_req, res: ServerResponse) => {
    if (draining) {
      res.shouldKeepAlive = false;
      return;
    }
    pending.add(res);
    res.on('close', forget);
  });
  return {
    start() {
      draining = true;
      for (const res of pending) if (!res.headersSent) res.shouldKeepAlive = false;
      pending.clear();
    },
  };
}
