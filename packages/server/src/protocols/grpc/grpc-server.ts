/** The service's gRPC server: grpc-js with the lean ShouldRateLimit path, bound to a port or socket, TLS reloadable. */
import type { EventEmitter } from 'node:events';
import { constants, type Http2Session } from 'node:http2';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { addGrpcJsServices } from './grpc-js-services.js';
import { DEFAULT_KEEPALIVE, type GrpcHandle, type GrpcServerOptions } from './grpc-server-options.js';
import { dispatchStreams, GRPC_JS_VERSION, onHttp2Servers } from './lean-dispatch.js';
import { createReceiveGuard } from './receive-guard.js';
import { createRlsCallHandler } from './rls-call.js';
import { ReloadableServerCredentials, type TlsMaterial } from './tls.js';

export { grpcStatusOf } from './grpc-js-services.js';
export {
  DEFAULT_KEEPALIVE,
  type GrpcHandle,
  type GrpcServerOptions,
  type KeepaliveOptions,
} from './grpc-server-options.js';
export { GRPC_JS_VERSION, LEAN_PATH_GRPC_JS } from './lean-dispatch.js';

/**
 * Serves `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` and `grpc.health.v1.Health` on
 * `host:port` (0 = any free port) with @grpc/grpc-js; ShouldRateLimit calls are answered on the lean path,
 * in grpc-js's words (see {@link dispatchStreams}).
 */
export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcHandle> {
  const { decider, metrics, logger } = options;
  const guard = createReceiveGuard(options.limits);
  const server = new Server({
    'grpc.max_receive_message_length': guard.limits.maxMessageBytes,
    'grpc.max_concurrent_streams': options.maxStreams ?? 4096,
    // Channelz (grpc-js's introspection service, which sluice does not serve) costs every call a tracker
    // object, four closures and two clock reads; off, as in grpc-js's own fast path.
    'grpc.enable_channelz': 0,
    // grpc-go's server keepalive (what envoy ratelimit runs with): a vanished peer's connection is cut.
    'grpc.keepalive_time_ms': (options.keepalive ?? DEFAULT_KEEPALIVE).timeMs,
    'grpc.keepalive_timeout_ms': (options.keepalive ?? DEFAULT_KEEPALIVE).timeoutMs,
    ...(options.maxConnectionAgeMs === undefined ? {} : { 'grpc.max_connection_age_ms': options.maxConnectionAgeMs }),
    ...(options.maxConnectionAgeGraceMs === undefined
      ? {}
      : { 'grpc.max_connection_age_grace_ms': options.maxConnectionAgeGraceMs }),
  });
  const clientSan = options.tls?.clientSan;
  const rateLimit = options.rateLimitOnGrpcJs
    ? undefined
    : createRlsCallHandler({
        decider,
        metrics,
        logger,
        guard,
        ...(clientSan === undefined ? {} : { clientSan }),
      });
  const sessions = new Set<Http2Session>();
  const hooked = onHttp2Servers(server, (http2Server) => {
    trackSessions(http2Server, sessions);
    dispatchStreams(http2Server, rateLimit, guard, metrics);
  });
  if (!hooked) {
    logger.warn(
      { grpcJs: GRPC_JS_VERSION },
      'the lean ShouldRateLimit path does not know this @grpc/grpc-js: grpc-js answers every call (about 1.4x the CPU), and unfinished messages are bounded by size only; install the @grpc/grpc-js version sluice-server depends on',
    );
  }
  addGrpcJsServices(server, options);
  const credentials =
    options.tls === undefined
      ? ServerCredentials.createInsecure()
      : new ReloadableServerCredentials(options.tls.material);
  const port = await new Promise<number>((resolve, reject) => {
    const address =
      options.socket === undefined ? `${bracket(options.host)}:${options.port}` : `unix:${options.socket}`;
    server.bindAsync(address, credentials, (error, bound) =>
      error ? reject(error) : resolve(options.socket === undefined ? bound : 0),
    );
  });
  return {
    port,
    ...(credentials instanceof ReloadableServerCredentials
      ? { updateTls: (material: TlsMaterial) => credentials.update(material) }
      : {}),
    close(graceMs) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          cancelSessions(sessions);
        }, graceMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

/** Keeps `sessions` listing the open HTTP/2 sessions (connections) of `http2Server`. */
function trackSessions(http2Server: EventEmitter, sessions: Set<Http2Session>): void {
  http2Server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
}

/**
 * Ends every connection, and so every call on it, once the shutdown grace is over. grpc-js's forceShutdown
 * cannot: it destroys the sessions in its channelz table, which stays empty with channelz off (as here), so
 * a call still receiving its message held the process until its message timeout (`--grpc-message-timeout`).
 */
function cancelSessions(sessions: Set<Http2Session>): void {
  for (const session of sessions) session.destroy(undefined, constants.NGHTTP2_CANCEL);
  sessions.clear();
}

function bracket(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
