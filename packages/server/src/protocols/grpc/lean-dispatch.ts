/**
 * The lean ShouldRateLimit path's hook into grpc-js: its HTTP/2 servers' 'stream' events, taken over so
 * ShouldRateLimit calls go to rls-call.ts and everything else to grpc-js under the receive guard.
 */
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { createRequire } from 'node:module';
import { type Server, status } from '@grpc/grpc-js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { describeFailure, isAnswerable, type ReceiveFailure, type ReceiveGuard } from './receive-guard.js';
import { SHOULD_RATE_LIMIT_PATH } from './rls-call.js';

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
export function dispatchStreams(
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
export function onHttp2Servers(server: Server, watch: (http2Server: EventEmitter) => void): boolean {
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
