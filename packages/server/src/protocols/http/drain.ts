/** Shutdown for an HTTP server: answers say `Connection: close` while in-flight requests finish. */
import type { Server, ServerResponse } from 'node:http';
import { deferIdleClose } from './drain-idle.js';

/** Lets a server tell keep-alive clients, while it shuts down, that the connection ends with this answer. */
export interface Drain {
  /**
   * From now on every answer (and every answer not yet started) carries `Connection: close`; idle
   * connections stay open for a next request a little longer (see drain-idle.ts).
   */
  start(): void;
}

/** A response's place in the list of unanswered ones (links on the response itself: nothing else to allocate). */
interface Pending {
  [kPrev]?: PendingResponse | undefined;
  [kNext]?: PendingResponse | undefined;
  [kDrain]?: PendingList | undefined;
}
type PendingResponse = ServerResponse & Pending;

const kPrev = Symbol('sluice.drain.prev');
const kNext = Symbol('sluice.drain.next');
const kDrain = Symbol('sluice.drain.list');

interface PendingList {
  head: PendingResponse | undefined;
}

/**
 * Tracks a server's unanswered requests so that shutdown can mark their answers `Connection: close`:
 * a keep-alive client then opens a new connection (to another instance) for its next request instead of
 * reusing one the server is about to close, which it would see as ECONNRESET.
 *
 * A linked list through the responses, not a `Set`. With a Set gaining and losing an entry per request,
 * the responses it had held — their requests, socket state and buffers — survived the young-generation
 * GCs and were promoted: under the gateway benchmark 1.6 MB survived each scavenge (80 kB with the list,
 * as for a bare Node proxy), old-generation GCs ran several times a second, and the gateway spent a
 * quarter more CPU per request than the bare proxy. The likely path: V8 rehashes such a set into a new
 * table every few requests and leaves the old table pointing at the new one (for iterators), so once one
 * table is in the old generation, it keeps every later table and what those held alive.
 */
export function createDrain(server: Server): Drain {
  let draining = false;
  const list: PendingList = { head: undefined };
  server.prependListener('request', (_req, res: PendingResponse) => {
    if (draining) {
      res.shouldKeepAlive = false;
      return;
    }
    const head = list.head;
    res[kNext] = head;
    res[kPrev] = undefined;
    res[kDrain] = list;
    if (head !== undefined) head[kPrev] = res;
    list.head = res;
    // One module-level listener for every response ('close' always follows 'finish'): no closure per request.
    res.on('close', forget);
  });
  return {
    start() {
      draining = true;
      for (let res = list.head; res !== undefined; res = res[kNext]) if (!res.headersSent) res.shouldKeepAlive = false;
      deferIdleClose(server);
    },
  };
}

/** Takes an answered response out of its list, and clears its links so that it holds no other response. */
function forget(this: PendingResponse): void {
  const list = this[kDrain];
  if (list === undefined) return;
  const prev = this[kPrev];
  const next = this[kNext];
  if (prev === undefined) list.head = next;
  else prev[kNext] = next;
  if (next !== undefined) next[kPrev] = prev;
  this[kPrev] = undefined;
  this[kNext] = undefined;
  this[kDrain] = undefined;
}
