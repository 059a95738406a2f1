import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { createRequire } from 'node:module';
import {
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { isSluiceError } from 'sluice';
import type { RateLimitRequest } from 'sluice/rules';
import type { Decided, Decider } from '../../core/decide.js';
import { isStoreError } from '../../core/decide.js';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { requestFromWire } from '../../rls/codec.js';
import type { WireRequest } from '../../rls/wire.js';
import { type GrpcHealthCheck, loadHealthService } from './health-service.js';
import type { HealthWatch } from './health-watch.js';
import { grpcJsWatchHandler } from './health-watch-streams.js';
import {
  createReceiveGuard,
  describeFailure,
  isAnswerable,
  type ReceiveFailure,
  type ReceiveGuard,
  type ReceiveLimits,
} from './receive-guard.js';
import { createRlsCallHandler, SHOULD_RATE_LIMIT_PATH } from './rls-call.js';
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

/** Server keepalive pings (grpc-go's server keepalive `Time` and `Timeout`). */
export interface KeepaliveOptions {
  /** Ping each connection this often. @default 2 h (grpc-go's default) */
  readonly timeMs: number;
  /** Cut a connection whose ping is not answered within this. @default 20 s (grpc-go's default) */
  readonly timeoutMs: number;
}

/** grpc-go's server keepalive defaults, which envoy ratelimit runs with. */
export const DEFAULT_KEEPALIVE: KeepaliveOptions = { timeMs: 2 * 3_600_000, timeoutMs: 20_000 };

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
  maxStreams?: number;
  /** TLS (mutual TLS when the material has a CA); `clientSan`: a DNS name client certificates must carry. */
  tls?: { material: TlsMaterial; clientSan?: string };
  /** Answers `grpc.health.v1.Health/Check`. */
  health?: GrpcHealthCheck;
  /** Serves `grpc.health.v1.Health/Watch` (with `health`). */
  healthWatch?: HealthWatch;
  /** GOAWAY connections older than this, ±10% (envoy's GRPC_MAX_CONNECTION_AGE). @default none */
  maxConnectionAgeMs?: number;
  /** Then cut them after this long (GRPC_MAX_CONNECTION_AGE_GRACE). @default none: wait for their streams */
  maxConnectionAgeGraceMs?: number;
  /** Ping connections; cut those that do not answer. @default DEFAULT_KEEPALIVE */
  keepalive?: KeepaliveOptions;
  /**
   * Let grpc-js answer ShouldRateLimit too, instead of the lean path on grpc-js's connections (same
   * answers, about 1.4× the CPU per call). For comparisons. @default false
   */
  rateLimitOnGrpcJs?: boolean;
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

/** A `'stream'` listener of an HTTP/2 server. */
type StreamListener = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags?: number, raw?: string[]) => void;

/**
 * Takes over the `'stream'` event of one of grpc-js's HTTP/2 servers. ShouldRateLimit calls (a POST of
 * `application/grpc*` to its path) are answered by `rateLimit`, the lean server's code, straight from the
 * HTTP/2 stream; every other stream goes to grpc-js as before (health Check and Watch, unknown methods,
 * anything that is not a gRPC POST), under the receive guard. The connection stays grpc-js's: TLS, keepalive,
 * max connection age and shutdown apply to both kinds of call alike.
 *
 * grpc-js's own per-call work (a call object, metadata copied from the headers, a stream decoder, an
 * emitter, its response and trailer objects: about 8 KB of allocations per call) is about a third of the
 * CPU of a decision, and no grpc-js option turns it off.
 */
function dispatchStreams(
  http2Server: EventEmitter,
  rateLimit: StreamListener | undefined,
  guard: ReceiveGuard,
  metrics: ServiceMetrics,
): void {
  const grpcJs = http2Server.listeners('stream') as StreamListener[];
  http2Server.removeAllListeners('stream');
  // The event's arguments by name (a rest parameter would cost every call an array).
  http2Server.on(
    'stream',
    function (this: unknown, stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags, raw) {
      if (
        rateLimit !== undefined &&
        headers[':path'] === SHOULD_RATE_LIMIT_PATH &&
        headers[':method'] === 'POST' &&
        isGrpcContentType(headers['content-type'])
      ) {
        stream.on('error', ignore);
        rateLimit(stream, headers);
        return;
      }
      guardStream(stream, guard, metrics);
      for (const listener of grpcJs) listener.call(this, stream, headers, flags, raw);
    },
  );
}

function isGrpcContentType(contentType: string | undefined): boolean {
  return typeof contentType === 'string' && contentType.startsWith('application/grpc');
}

function ignore(): void {}

/**
 * Puts a stream grpc-js answers under the same {@link ReceiveGuard} as the lean path: the request bytes a
 * call holds before its request is complete count against the connection's and the server's budgets,
 * and a call whose request is not complete in time gets DEADLINE_EXCEEDED. grpc-js has no option for
 * either (its own deadline is the client's `grpc-timeout`, which an attacker leaves out). This watches
 * the HTTP/2 stream itself, ahead of grpc-js's handler, rather than the call through a grpc-js
 * interceptor, which would wrap the call in another call object with its own listener chain.
 */
function guardStream(stream: ServerHttp2Stream, guard: ReceiveGuard, metrics: ServiceMetrics): void {
  const reception = guard.open(stream.session, () => refuse(stream, 'timeout', metrics, guard));
  const onData = (chunk: Buffer) => {
    const failure = reception.add(chunk.length);
    if (failure === undefined) return;
    stream.off('data', onData);
    refuse(stream, failure, metrics, guard);
  };
  stream.on('data', onData);
  // The request is complete (or will never be): its bytes are grpc-js's to hold no more.
  const release = () => reception.release();
  stream.on('end', release);
  stream.on('close', release);
  stream.on('finish', closeUnfinished);
}

/**
 * Answers a call whose request broke a bound with a trailers-only gRPC status and closes its stream at
 * once (RST_STREAM NO_ERROR after the status, RFC 9113 §8.1): the stream is then closed to grpc-js too,
 * which so drops what it buffered and never runs the handler.
 */
function refuse(stream: ServerHttp2Stream, failure: ReceiveFailure, metrics: ServiceMetrics, guard: ReceiveGuard) {
  const { status: name, message } = describeFailure(failure, guard.limits);
  metrics.grpc(name);
  try {
    if (isAnswerable(stream) && !stream.headersSent) {
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': String(status[name]),
          'grpc-message': encodeURI(message),
        },
        { endStream: true },
      );
    }
    if (!stream.destroyed && !stream.closed) stream.close();
  } catch {
    stream.destroy();
  }
}

/**
 * After an answer to a request the client has not finished sending (grpc-js's own refusals, e.g. of an
 * oversized declared length), close the stream: grpc-js keeps what it buffered until the stream closes.
 */
function closeUnfinished(this: ServerHttp2Stream): void {
  if (!this.readableEnded && !this.destroyed && !this.closed) this.close();
}

/**
 * The grpc-js versions whose private `Server#createHttp2Server` the lean path has been checked against
 * (grpc-server.test.ts fails loudly when the installed one is outside, or the method moved). Any other
 * version runs every call through grpc-js: slower, never wrong.
 */
export const LEAN_PATH_GRPC_JS = /^1\.14\.\d+$/;

/** The installed grpc-js's version. */
export const GRPC_JS_VERSION: string = (
  createRequire(import.meta.url)('@grpc/grpc-js/package.json') as { version: string }
).version;

/**
 * Calls `watch` with each HTTP/2 server grpc-js creates (one per bound address), through the method that
 * creates them — grpc-js's own, not a public API: false when this grpc-js is not one the lean path knows,
 * or has no such method.
 */
function onHttp2Servers(server: Server, watch: (http2Server: EventEmitter) => void): boolean {
  const target = server as unknown as { createHttp2Server?: (...args: unknown[]) => unknown };
  const create = target.createHttp2Server;
  if (!LEAN_PATH_GRPC_JS.test(GRPC_JS_VERSION) || typeof create !== 'function') return false;
  target.createHttp2Server = function (this: unknown, ...args: unknown[]) {
    const http2Server = create.apply(this, args);
    if (http2Server instanceof EventEmitter) watch(http2Server);
    return http2Server;
  };
  return true;
}

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
  if (!onHttp2Servers(server, (http2Server) => dispatchStreams(http2Server, rateLimit, guard, metrics))) {
    logger.warn(
      { grpcJs: GRPC_JS_VERSION },
      'the lean ShouldRateLimit path does not know this @grpc/grpc-js: grpc-js answers every call (about 1.4x the CPU), and unfinished messages are bounded by size only; install the @grpc/grpc-js version sluice-server depends on',
    );
  }
  const fail = (callback: sendUnaryData<Decided>, error: unknown) => {
    const code = grpcStatusOf(error);
    metrics.grpc(CODE_NAMES[code] ?? String(code));
    if (code === status.INTERNAL) logger.error({ err: error }, 'ShouldRateLimit failed');
    else if (code === status.UNAVAILABLE) logger.warn({ err: (error as Error).message }, 'store unavailable');
    callback({ code, details: code === status.INTERNAL ? 'internal error' : (error as Error).message });
  };
  /** With mutual TLS and a required SAN: whether this call's client certificate lacks it (then refuse it). */
  const wrongClient = (call: { getAuthContext(): { sslPeerCertificate?: unknown } }) =>
    clientSan !== undefined &&
    !certificateHasSan(call.getAuthContext().sslPeerCertificate as Parameters<typeof certificateHasSan>[0], clientSan);
  const wrongClientError = {
    code: status.UNAUTHENTICATED,
    details: `the client certificate does not name ${clientSan}`,
  };
  server.addService(RLS_SERVICE_DEFINITION, {
    ShouldRateLimit(call: ServerUnaryCall<WireRequest, Decided>, callback: sendUnaryData<Decided>) {
      if (wrongClient(call)) {
        metrics.grpc('UNAUTHENTICATED');
        callback(wrongClientError);
        return;
      }
      let request: RateLimitRequest;
      try {
        request = requestFromWire(call.request);
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
    const watch = options.healthWatch === undefined ? undefined : grpcJsWatchHandler(options.healthWatch);
    server.addService(loadHealthService(), {
      // Health calls are refused to a client certificate without the SAN, as ShouldRateLimit is.
      Check(call: ServerUnaryCall<{ service?: string }, unknown>, callback: sendUnaryData<unknown>) {
        if (wrongClient(call)) {
          metrics.grpc('UNAUTHENTICATED');
          callback(wrongClientError);
          return;
        }
        health(call.request.service ?? '').then(
          (answer) =>
            answer === undefined
              ? callback({ code: status.NOT_FOUND, details: 'unknown service' })
              : callback(null, { status: answer }),
          () => callback(null, { status: 'NOT_SERVING' }),
        );
      },
      ...(watch === undefined
        ? {}
        : {
            Watch(call: ServerWritableStream<{ service?: string }, unknown>) {
              if (wrongClient(call)) {
                metrics.grpc('UNAUTHENTICATED');
                call.emit('error', wrongClientError);
                return;
              }
              watch(call);
            },
          }),
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
