import type { ServerHttp2Stream } from 'node:http2';
import {
  Server,
  ServerCredentials,
  ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { isSluiceError } from 'sluice';
import type { Decider } from '../decide.js';
import { isStoreError } from '../decide.js';
import { requestFromMessage } from '../envoy-codec.js';
import type { Logger } from '../logger.js';
import type { ServiceMetrics } from '../metrics.js';
import { DEFAULT_KEEPALIVE, type KeepaliveOptions } from './connection-age.js';
import { type GrpcHealthCheck, loadHealthService } from './health-service.js';
import type { HealthWatch } from './health-watch.js';
import { grpcJsWatchHandler } from './health-watch-streams.js';
import {
  createReceiveGuard,
  describeFailure,
  type ReceiveGuard,
  type ReceiveLimits,
  type Reception,
} from './receive-guard.js';
import { RLS_SERVICE_DEFINITION } from './rls-definition.js';
import { certificateHasSan, ReloadableServerCredentials, type TlsMaterial } from './tls.js';

/** A listening gRPC server. */
export interface GrpcHandle {
  /** The bound TCP port; 0 on a unix socket. */
  readonly port: number;
  /** With TLS: serve new connections with these certificates from now on. */
  updateTls?(material: TlsMaterial): void;
  /** Stops taking calls, lets in-flight calls finish for up to `graceMs`, then cancels the rest. */
  close(graceMs: number): Promise<void>;
}

/** Options of {@link startGrpcServer}. */
export interface GrpcServerOptions {
  host: string;
  port: number;
  /** Listen on this unix socket instead of host:port (envoy's GRPC_UDS). */
  socket?: string;
  decider: Decider;
  metrics: ServiceMetrics;
  logger: Logger;
  /** Bounds on unfinished request messages (size, per connection, in total, time). @default DEFAULT_RECEIVE_LIMITS */
  limits?: Partial<ReceiveLimits>;
  /** Most concurrent streams one connection may open (HTTP/2 SETTINGS). @default 4096 */
  maxConcurrentStreams?: number;
  /** TLS (mutual TLS when the material has a CA); `clientSan`: a DNS name client certificates must carry. */
  tls?: { material: TlsMaterial; clientSan?: string };
  /** Answers `grpc.health.v1.Health/Check`. */
  health?: GrpcHealthCheck;
  /** Serves `grpc.health.v1.Health/Watch` (with `health`). */
  healthWatch?: HealthWatch;
  /** GOAWAY connections older than this (envoy's GRPC_MAX_CONNECTION_AGE). @default none */
  maxConnectionAgeMs?: number;
  /** Then cut them after this long (GRPC_MAX_CONNECTION_AGE_GRACE). @default none */
  maxConnectionAgeGraceMs?: number;
  /** Ping connections; cut those that do not answer. @default DEFAULT_KEEPALIVE */
  keepalive?: KeepaliveOptions;
}

const CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(status)
    .filter(([, v]) => typeof v === 'number')
    .map(([k, v]) => [v as number, k]),
);

/** The gRPC status of an error thrown while deciding. */
export function grpcStatusOf(error: unknown): number {
  if (
    isSluiceError(error) &&
    (error.code.startsWith('ERR_SLUICE_REQUEST_') || error.code === 'ERR_SLUICE_TOO_MANY_ITEMS')
  ) {
    return status.INVALID_ARGUMENT;
  }
  if (isStoreError(error)) return status.UNAVAILABLE;
  return status.INTERNAL;
}

/**
 * A server interceptor that puts grpc-js calls under the same {@link ReceiveGuard} as the h2 server: the
 * request bytes a call holds before its message is complete count against the connection's and the
 * server's budgets, and a call whose message is not complete in time gets DEADLINE_EXCEEDED. grpc-js has
 * no option for either (its own deadline is the client's `grpc-timeout`, which an attacker leaves out), so
 * the interceptor watches the call's HTTP/2 stream, which grpc-js's innermost call object exposes.
 */
function receiveInterceptor(guard: ReceiveGuard, metrics: ServiceMetrics, logger: Logger): ServerInterceptor {
  let warned = false;
  return (_method, call) => {
    const stream = streamOf(call);
    if (stream === undefined && !warned) {
      warned = true;
      logger.warn('grpc-js no longer exposes a call stream: unfinished messages are bounded by size only');
    }
    let reception: Reception | undefined;
    let complete = false;
    /** grpc-js keeps what it buffered until the stream closes: after an answer to an unfinished request, close it (RFC 9113 §8.1, NO_ERROR). */
    const closeUnfinished = () => {
      if (complete || stream === undefined) return;
      reception?.release();
      setImmediate(() => {
        if (!stream.destroyed && !stream.closed) stream.close();
      });
    };
    const intercepted: ServerInterceptingCall = new ServerInterceptingCall(call, {
      sendStatus(statusObject, next) {
        next(statusObject);
        // grpc-js's own refusals (an oversized declared length) end here too.
        closeUnfinished();
      },
      start(next) {
        if (stream !== undefined) {
          const cutOff = (failure: Parameters<typeof describeFailure>[0]) => {
            stream.off('data', onData);
            const { status: name, message } = describeFailure(failure, guard.limits);
            metrics.grpc(name);
            intercepted.sendStatus({ code: status[name], details: message });
          };
          const onData = (chunk: Buffer) => {
            const failure = reception?.add(chunk.length);
            if (failure !== undefined) cutOff(failure);
          };
          reception = guard.open(stream.session, () => cutOff('timeout'));
          stream.on('data', onData);
          stream.once('close', () => reception?.release());
        }
        next({
          onReceiveMessage(message, nextMessage) {
            complete = true;
            reception?.release();
            nextMessage(message);
          },
        });
      },
    });
    return intercepted;
  };
}

/** The HTTP/2 stream under grpc-js's innermost call (a property its objects carry, not a public API). */
function streamOf(call: ServerInterceptingCallInterface): ServerHttp2Stream | undefined {
  const stream = (call as unknown as { stream?: unknown }).stream;
  return typeof stream === 'object' && stream !== null && 'respond' in stream
    ? (stream as ServerHttp2Stream)
    : undefined;
}

/** Serves `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` on `host:port` (0 = any free port). */
export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcHandle> {
  const { decider, metrics, logger } = options;
  const guard = createReceiveGuard(options.limits);
  const server = new Server({
    'grpc.max_receive_message_length': guard.limits.maxMessageBytes,
    'grpc.max_concurrent_streams': options.maxConcurrentStreams ?? 4096,
    // Channelz (grpc-js's introspection service, which sluice does not serve) costs every call a tracker
    // object, four closures and two clock reads; off, as in grpc-js's own fast path.
    'grpc.enable_channelz': 0,
    interceptors: [receiveInterceptor(guard, metrics, logger)],
    // grpc-go's server keepalive (what envoy ratelimit runs with): a vanished peer's connection is cut.
    'grpc.keepalive_time_ms': (options.keepalive ?? DEFAULT_KEEPALIVE).timeMs,
    'grpc.keepalive_timeout_ms': (options.keepalive ?? DEFAULT_KEEPALIVE).timeoutMs,
    ...(options.maxConnectionAgeMs === undefined ? {} : { 'grpc.max_connection_age_ms': options.maxConnectionAgeMs }),
    ...(options.maxConnectionAgeGraceMs === undefined
      ? {}
      : { 'grpc.max_connection_age_grace_ms': options.maxConnectionAgeGraceMs }),
  });
  const clientSan = options.tls?.clientSan;
  const fail = (callback: sendUnaryData<unknown>, error: unknown) => {
    const code = grpcStatusOf(error);
    metrics.grpc(CODE_NAMES[code] ?? String(code));
    if (code === status.INTERNAL) logger.error({ err: error }, 'ShouldRateLimit failed');
    else if (code === status.UNAVAILABLE) logger.warn({ err: (error as Error).message }, 'store unavailable');
    callback({ code, details: code === status.INTERNAL ? 'internal error' : (error as Error).message });
  };
  server.addService(RLS_SERVICE_DEFINITION, {
    ShouldRateLimit(call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) {
      if (clientSan !== undefined && !certificateHasSan(call.getAuthContext().sslPeerCertificate, clientSan)) {
        metrics.grpc('UNAUTHENTICATED');
        callback({ code: status.UNAUTHENTICATED, details: `the client certificate does not name ${clientSan}` });
        return;
      }
      let request: ReturnType<typeof requestFromMessage>;
      try {
        request = requestFromMessage(call.request);
      } catch (error) {
        fail(callback, error);
        return;
      }
      decider.decide(request, 'grpc', call.metadata).then(
        (decided) => {
          metrics.grpc('OK');
          callback(null, decided);
        },
        (error: unknown) => fail(callback, error),
      );
    },
  });
  const health = options.health;
  if (health !== undefined) {
    server.addService(loadHealthService(), {
      Check(call: ServerUnaryCall<{ service?: string }, unknown>, callback: sendUnaryData<unknown>) {
        health(call.request.service ?? '').then(
          (answer) =>
            answer === undefined
              ? callback({ code: status.NOT_FOUND, details: 'unknown service' })
              : callback(null, { status: answer }),
          () => callback(null, { status: 'NOT_SERVING' }),
        );
      },
      ...(options.healthWatch === undefined ? {} : { Watch: grpcJsWatchHandler(options.healthWatch) }),
    });
  }
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
        const timer = setTimeout(() => server.forceShutdown(), graceMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

function bracket(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
