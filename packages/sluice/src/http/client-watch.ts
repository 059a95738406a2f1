/**
 * What an adapter tells the middleware's core about a request's client, so that a request held in a queue (the
 * adaptive limiter's, or shape mode's delay) can tell when its client has gone: its Node response, or (Hono) how to get
 * a signal that aborts when the client leaves. Adapters call `watchResponse` or `watchClientSignal` before deciding,
 * only for a limiter whose `watchesClient` is true.
 */

/** A Node response as the core watches it (structural: this module imports no node:*). */
export interface GateResponse {
  readonly statusCode: number;
  readonly destroyed?: boolean;
  once(event: 'prefinish' | 'close', listener: () => void): unknown;
}

/** What an adapter told of a request: its Node response, or how to get a signal that aborts when its client leaves. */
export type Watched = GateResponse | (() => AbortSignal);

// Keyed by the request the adapter decides on; weak, so that an entry goes with its request.
const watched = new WeakMap<object, Watched>();

/** Tells the core the Node response of `req`. */
export function watchResponse(req: object, res: GateResponse): void {
  watched.set(req, res);
}

/** As `watchResponse`, for a request with a signal that aborts when its client leaves (Hono; read only when needed). */
export function watchClientSignal(req: object, signal: () => AbortSignal): void {
  watched.set(req, signal);
}

/** What the adapter told of `req`, if anything. */
export function watchedOf(req: unknown): Watched | undefined {
  return typeof req === 'object' && req !== null ? watched.get(req) : undefined;
}

/** A signal that aborts when the client of a watched request goes away (while it waits, 'close' can mean nothing else). */
export function clientLeft(seen: Watched): AbortSignal {
  if (typeof seen === 'function') return seen();
  const left = new AbortController();
  if (seen.destroyed === true) left.abort();
  else seen.once('close', () => left.abort());
  return left.signal;
}
