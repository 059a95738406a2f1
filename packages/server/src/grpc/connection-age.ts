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
