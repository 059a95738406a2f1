/**
 * gRPC answers written straight onto HTTP/2 streams, worded exactly as @grpc/grpc-js words them, so a
 * client cannot tell the lean ShouldRateLimit path from grpc-js itself.
 */
import { constants, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { isAnswerable } from './receive-guard.js';

/** gRPC status codes used here (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
export const GRPC_STATUS = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

const STATUS_NAMES: Record<number, string> = Object.fromEntries(Object.entries(GRPC_STATUS).map(([k, v]) => [v, k]));

// grpc-js 1.x: server-interceptors.ts (defaultResponseHeaders, defaultCompressionHeaders, sendStatus).
const HEADERS: OutgoingHttpHeaders = {
  ':status': 200,
  'content-type': 'application/grpc+proto',
  'grpc-accept-encoding': 'identity,deflate,gzip',
  'grpc-encoding': 'identity',
};
const TRAILERS: OutgoingHttpHeaders = { 'grpc-status': '0', 'grpc-message': 'OK' };
const CONTENT_TYPE = 'application/grpc+proto';

/** The options of every answer that carries a message (`respond` copies them; one object serves all). */
const WAIT_FOR_TRAILERS = Object.freeze({ waitForTrailers: true });

/** Answers on raw HTTP/2 streams; see {@link createGrpcResponder}. */
export interface GrpcResponder {
  /**
   * Wraps an event handler of a client-driven stream: whatever the client did (left, reset, sent
   * garbage), an exception there is logged, never thrown into the event loop, and the stream is ended.
   */
  guarded<A extends unknown[]>(stream: ServerHttp2Stream, handler: (...args: A) => void): (...args: A) => void;
  /** A Trailers-Only answer with `code` and `message`; `count` false keeps it out of the gRPC metrics. */
  fail(stream: ServerHttp2Stream, code: number, message: string, count?: boolean): void;
  /** Answers one message frame (with its 5-byte prefix) and status OK. */
  reply(stream: ServerHttp2Stream, frame: Buffer): void;
}

/** Ends a stream we will not answer (or already answered) without waiting for the rest of its request. */
export function abandon(stream: ServerHttp2Stream): void {
  try {
    if (!stream.destroyed && !stream.closed) stream.close(constants.NGHTTP2_NO_ERROR);
  } catch {
    // Already gone.
  }
}

/** After a complete answer to a request the client has not finished sending: ask it to stop (RFC 9113 §8.1). */
export function stopReading(stream: ServerHttp2Stream): void {
  if (stream.readableEnded) return;
  stream.once('finish', () => abandon(stream));
  stream.resume();
}

/**
 * Answers gRPC on raw HTTP/2 streams. A client may leave at any point of a call (RST_STREAM, a dropped
 * connection, GOAWAY): every answer checks that the stream can still take one, so no such exit throws.
 */
export function createGrpcResponder(metrics: ServiceMetrics, logger: Logger): GrpcResponder {
  const onTrailers = function (this: ServerHttp2Stream) {
    try {
      if (isAnswerable(this)) this.sendTrailers(TRAILERS);
    } catch {
      abandon(this);
    }
  };
  return {
    guarded(stream, handler) {
      return (...args) => {
        try {
          handler(...args);
        } catch (error) {
          logger.error({ err: error }, 'gRPC stream handler failed');
          abandon(stream);
        }
      };
    },
    fail(stream, code, message, count = true) {
      if (count) metrics.grpc(STATUS_NAMES[code] ?? String(code));
      if (!isAnswerable(stream) || stream.headersSent) return;
      try {
        // Trailers-Only: the status travels in the one HEADERS frame that ends the stream.
        stream.respond(
          {
            ':status': 200,
            'content-type': CONTENT_TYPE,
            'grpc-status': String(code),
            'grpc-message': encodeURI(message),
          },
          { endStream: true },
        );
        stopReading(stream);
      } catch {
        // The client left between the check and the answer.
        abandon(stream);
      }
    },
    reply(stream, frame) {
      metrics.grpc('OK');
      if (!isAnswerable(stream) || stream.headersSent) return;
      try {
        stream.respond(HEADERS, WAIT_FOR_TRAILERS);
        // `on`, not `once`: a stream asks for its trailers once, and `once` costs a wrapper per call.
        stream.on('wantTrailers', onTrailers);
        stream.end(frame);
      } catch {
        abandon(stream);
      }
    },
  };
}
