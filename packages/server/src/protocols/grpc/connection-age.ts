import { constants, type Http2Session } from 'node:http2';

/**
 * gRPC's max connection age on a Node HTTP/2 session (grpc-go's `MaxConnectionAge`, envoy ratelimit's
 * GRPC_MAX_CONNECTION_AGE): after `ageMs`, give or take 10% so that connections opened together do not
 * all leave together, the server sends GOAWAY — the client opens a new connection for new calls, which
 * lets a load balancer spread long-lived clients again — and the calls in flight may finish. `graceMs`
 * after the GOAWAY (GRPC_MAX_CONNECTION_AGE_GRACE), whatever is still open is cut; without it the
 * connection closes when its last stream ends. The timers never hold the process open.
 */
export function limitConnectionAge(session: Http2Session, ageMs: number, graceMs?: number): void {
  const jitter = (Math.random() * 2 - 1) * ageMs * 0.1;
  let grace: NodeJS.Timeout | undefined;
  const age = setTimeout(() => {
    if (session.destroyed || session.closed) return;
    try {
      // The last stream id the server will process: every stream already open may finish.
      session.goaway(constants.NGHTTP2_NO_ERROR, 2 ** 31 - 1, Buffer.from('max_age'));
      session.close();
    } catch {
      session.destroy();
      return;
    }
    if (graceMs !== undefined) {
      grace = setTimeout(() => session.destroy(), graceMs);
      grace.unref();
    }
  }, ageMs + jitter);
  age.unref();
  session.once('close', () => {
    clearTimeout(age);
    if (grace !== undefined) clearTimeout(grace);
  });
}

/** Server keepalive pings (grpc-go's server keepalive `Time` and `Timeout`). */
export interface KeepaliveOptions {
  /** Ping each connection this often. @default 2 h (grpc-go's default) */
  readonly timeMs: number;
  /** Cut a connection whose ping is not answered within this. @default 20 s (grpc-go's default) */
  readonly timeoutMs: number;
}

/** grpc-go's server keepalive defaults, which envoy ratelimit runs with. */
export const DEFAULT_KEEPALIVE: KeepaliveOptions = { timeMs: 2 * 3_600_000, timeoutMs: 20_000 };

/**
 * Pings `session` every `timeMs` and destroys it when a ping goes unanswered for `timeoutMs`: a peer that
 * vanished without closing its connection (a half-open TCP connection) does not hold its streams — a
 * health Watch, say — for ever. The timers never hold the process open.
 */
export function keepSessionAlive(session: Http2Session, keepalive: KeepaliveOptions): void {
  // 0 (or nonsense) turns pings off, as grpc-js does with a keepalive time of 0.
  if (!(keepalive.timeMs > 0 && keepalive.timeMs < 2 ** 31 && keepalive.timeoutMs > 0)) return;
  let deadline: NodeJS.Timeout | undefined;
  const tick = setInterval(() => {
    if (session.destroyed || deadline !== undefined) return;
    deadline = setTimeout(() => session.destroy(), keepalive.timeoutMs);
    deadline.unref();
    try {
      session.ping(() => {
        clearTimeout(deadline);
        deadline = undefined;
      });
    } catch {
      session.destroy();
    }
  }, keepalive.timeMs);
  tick.unref();
  session.once('close', () => {
    clearInterval(tick);
    if (deadline !== undefined) clearTimeout(deadline);
  });
}
