/** At shutdown, idle keep-alive connections stay open a moment for a request already on its way, then close. */
import type { Server } from 'node:http';

/**
 * How long a drain leaves idle keep-alive connections open, ms: a client that sends its next request
 * within this time has it answered, with `Connection: close`, instead of having the connection cut under
 * it. @default 500
 */
export const DRAIN_IDLE_MS = 500;

/**
 * Defers `server.closeIdleConnections()` for `ms` from now. Node's `server.close()` destroys every
 * connection idle at that moment, and a keep-alive client that has just been answered sends its next
 * request on it right away: that request met a reset (ECONNRESET), with no answer and no
 * `Connection: close` ever sent. For `ms`, idle connections stay open; a next request arrives, is answered
 * with `Connection: close` (the drain marks it) and the connection ends cleanly. After `ms`, the calls
 * (`close()`'s own, the service's sweep, the one scheduled here) close idle connections as before.
 */
export function deferIdleClose(server: Server, ms: number = DRAIN_IDLE_MS): void {
  const closeIdle = server.closeIdleConnections;
  const until = performance.now() + ms;
  // An own property shadows the prototype's method: `server.close()` calls it through `this`.
  server.closeIdleConnections = function closeIdleWhenDue(this: Server) {
    if (performance.now() >= until) closeIdle.call(this);
  };
  setTimeout(() => closeIdle.call(server), ms).unref();
}
