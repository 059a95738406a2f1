import {
  constants,
  createSecureServer,
  createServer,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { gunzip, inflate } from 'node:zlib';
import { isSluiceError } from 'sluice';
import { isStoreError } from '../decide.js';
import { requestFromWire } from '../envoy-codec.js';
import { DEFAULT_KEEPALIVE, keepSessionAlive, limitConnectionAge } from './connection-age.js';
import type { GrpcHandle, GrpcServerOptions } from './grpc-server.js';
import { decodeHealthRequest, encodeHealthResponseFrame, HEALTH_CHECK_PATH } from './health-service.js';
import { HEALTH_WATCH_PATH } from './health-watch.js';
import { serveH2Watch } from './health-watch-streams.js';
import { createReceiveGuard, describeFailure, isAnswerable, type ReceiveFailure } from './receive-guard.js';
import { certificateHasSan, type TlsMaterial, tlsServerOptions } from './tls.js';
import { decodeRateLimitRequest, encodeDecisionFrame, WireError } from './wire.js';

/** The one method served, as gRPC names it on the wire. */
export const SHOULD_RATE_LIMIT_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

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
} as const;

const STATUS_NAMES: Record<number, string> = Object.fromEntries(Object.entries(GRPC_STATUS).map(([k, v]) => [v, k]));

/**
 * Options of {@link startH2GrpcServer}: the same as the default server's, so the service and envoy mode
 * configure either one alike.
 */
export type H2GrpcServerOptions = GrpcServerOptions;

/** `grpc-message` is percent-encoded: everything outside printable ASCII, and `%` itself. */
function grpcMessage(text: string): string {
  return text.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c));
}

/**
 * Serves the RLS v3 `ShouldRateLimit` unary method over Node's own HTTP/2 (nghttp2), speaking the gRPC
 * wire protocol directly: length-prefixed protobuf messages, `grpc-status` in trailers, trailers-only
 * responses for errors, identity/gzip/deflate message encodings. A general gRPC framework spends most of
 * its time per call on machinery a single unary method does not need; this is what lets one core answer
 * tens of thousands of Envoy calls per second. Any gRPC client (Envoy, grpc-go, grpc-js) talks to it.
 *
 * A client may leave at any point of a call (RST_STREAM, a dropped connection, GOAWAY): every handler of
 * a stream runs through `guarded`, and every answer checks that the stream can still take one, so no
 * such exit can throw out of an event handler. Unfinished messages are bounded by a {@link ReceiveGuard}.
 */
export async function startH2GrpcServer(options: H2GrpcServerOptions): Promise<GrpcHandle> {
  const { decider, metrics, logger } = options;
  const guard = createReceiveGuard(options.limits);
  const { maxMessageBytes } = guard.limits;
  const tls = options.tls;
  const settings = { maxConcurrentStreams: options.maxConcurrentStreams ?? 4096 };
  const server =
    tls === undefined
      ? createServer({ settings })
      : createSecureServer({ settings, ...tlsServerOptions(tls.material) });
  const clientSan = tls?.clientSan;
  if (clientSan !== undefined) {
    // envoy ratelimit checks the client certificate's name during the handshake: a peer without it gets no session.
    server.on('secureConnection', (socket: TLSSocket) => {
      if (!certificateHasSan(socket.getPeerCertificate(), clientSan)) socket.destroy();
    });
  }
  const sessions = new Set<Http2Session>();

  /**
   * Wraps an event handler of a client-driven stream or session: whatever the client did (left, reset,
   * sent garbage), an exception here is logged, never thrown into the event loop where it would end the
   * process.
   */
  function guarded<A extends unknown[]>(stream: ServerHttp2Stream | undefined, handler: (...args: A) => void) {
    return (...args: A): void => {
      try {
        handler(...args);
      } catch (error) {
        logger.error({ err: error }, 'gRPC stream handler failed');
        if (stream !== undefined) abandon(stream);
      }
    };
  }

  /** Ends a stream we will not answer (or already answered) without waiting for the rest of its request. */
  function abandon(stream: ServerHttp2Stream, code: number = constants.NGHTTP2_NO_ERROR): void {
    try {
      if (!stream.destroyed && !stream.closed) stream.close(code);
    } catch {
      // Already gone.
    }
  }

  /** After a complete answer to a request the client has not finished sending: ask it to stop (RFC 9113 §8.1). */
  function stopReading(stream: ServerHttp2Stream): void {
    if (stream.readableEnded) return;
    stream.once('finish', () => abandon(stream));
    stream.resume();
  }

  function fail(stream: ServerHttp2Stream, code: number, message: string): void {
    metrics.grpc(STATUS_NAMES[code] ?? String(code));
    if (!isAnswerable(stream) || stream.headersSent) return;
    try {
      // Trailers-Only: the status travels in the one HEADERS frame that ends the stream.
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': String(code),
          'grpc-message': grpcMessage(message),
        },
        { endStream: true },
      );
      stopReading(stream);
    } catch {
      // The client left between the check and the answer.
      abandon(stream);
    }
  }

  function reply(stream: ServerHttp2Stream, frame: Buffer): void {
    metrics.grpc('OK');
    if (!isAnswerable(stream) || stream.headersSent) return;
    try {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.once(
        'wantTrailers',
        guarded(stream, () => {
          if (isAnswerable(stream)) stream.sendTrailers({ 'grpc-status': '0' });
        }),
      );
      stream.end(frame);
    } catch {
      abandon(stream);
    }
  }

  function handle(stream: ServerHttp2Stream, message: Buffer, headers: IncomingHttpHeaders): void {
    let request: ReturnType<typeof requestFromWire>;
    try {
      request = requestFromWire(decodeRateLimitRequest(message));
    } catch (error) {
      if (error instanceof WireError)
        fail(stream, GRPC_STATUS.INTERNAL, `could not decode the request: ${error.message}`);
      else fail(stream, GRPC_STATUS.INVALID_ARGUMENT, (error as Error).message);
      return;
    }
    decider.decide(request, 'grpc', headers).then(
      (decided) => reply(stream, encodeDecisionFrame(decided)),
      (error: unknown) => {
        if (
          isSluiceError(error) &&
          (error.code.startsWith('ERR_SLUICE_REQUEST_') || error.code === 'ERR_SLUICE_TOO_MANY_ITEMS')
        ) {
          fail(stream, GRPC_STATUS.INVALID_ARGUMENT, error.message);
        } else if (isStoreError(error)) {
          logger.warn({ err: (error as Error).message }, 'store unavailable');
          fail(stream, GRPC_STATUS.UNAVAILABLE, (error as Error).message);
        } else {
          logger.error({ err: error }, 'ShouldRateLimit failed');
          fail(stream, GRPC_STATUS.INTERNAL, 'internal error');
        }
      },
    );
  }

  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    keepSessionAlive(session, options.keepalive ?? DEFAULT_KEEPALIVE);
    if (options.maxConnectionAgeMs !== undefined) {
      limitConnectionAge(session, options.maxConnectionAgeMs, options.maxConnectionAgeGraceMs);
    }
    session.on('error', () => {});
  });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', () => {});
    guarded(stream, onStream)(stream, headers);
  });

  function onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    if (headers[':method'] !== 'POST') {
      stream.respond({ ':status': 405 }, { endStream: true });
      stopReading(stream);
      return;
    }
    const contentType = headers['content-type'];
    if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, { endStream: true });
      stopReading(stream);
      return;
    }
    if (headers[':path'] === HEALTH_CHECK_PATH && options.health !== undefined) {
      const health = options.health;
      readHealthRequest(stream, (service) =>
        health(service).then(
          (answer) =>
            answer === undefined
              ? fail(stream, GRPC_STATUS.NOT_FOUND, 'unknown service')
              : reply(stream, encodeHealthResponseFrame(answer)),
          () => reply(stream, encodeHealthResponseFrame('NOT_SERVING')),
        ),
      );
      return;
    }
    if (headers[':path'] === HEALTH_WATCH_PATH && options.healthWatch !== undefined) {
      const watch = options.healthWatch;
      readHealthRequest(stream, (service) =>
        serveH2Watch(stream, service, watch, (message) => fail(stream, GRPC_STATUS.RESOURCE_EXHAUSTED, message)),
      );
      return;
    }
    if (headers[':path'] !== SHOULD_RATE_LIMIT_PATH) {
      fail(stream, GRPC_STATUS.UNIMPLEMENTED, `unknown method ${String(headers[':path'])}`);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let cut = false;
    const cutOff = (failure: ReceiveFailure) => {
      cut = true;
      chunks.length = 0;
      reception.release();
      const { status, message } = describeFailure(failure, guard.limits);
      fail(stream, GRPC_STATUS[status], message);
      // fail() asked the client to stop; a client that left is already closed.
    };
    const reception = guard.open(
      stream.session,
      guarded(stream, () => {
        if (!cut) cutOff('timeout');
      }),
    );
    stream.on('close', () => reception.release());
    stream.on(
      'data',
      guarded(stream, (chunk: Buffer) => {
        if (cut) return;
        let failure = reception.add(chunk.length);
        // The message's declared length is known from its 5-byte prefix: refuse an oversized one at once.
        if (failure === undefined && size < 5 && size + chunk.length >= 5) {
          const prefix = Buffer.concat([...chunks, chunk], size + chunk.length);
          if (prefix.readUInt32BE(1) > maxMessageBytes) failure = 'too-large';
        }
        if (failure !== undefined) return cutOff(failure);
        size += chunk.length;
        chunks.push(chunk);
      }),
    );
    stream.on(
      'end',
      guarded(stream, () => {
        reception.release();
        // A stream the client reset or dropped ends here too, with whatever arrived: nobody to answer.
        if (cut || !isAnswerable(stream)) return;
        const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
        chunks.length = 0;
        if (body.length < 5) return fail(stream, GRPC_STATUS.INTERNAL, 'missing request message');
        const length = body.readUInt32BE(1);
        if (body.length !== 5 + length) {
          return fail(stream, GRPC_STATUS.INTERNAL, 'a unary call carries exactly one message');
        }
        const message = body.subarray(5);
        if (body[0] === 0) return handle(stream, message, headers);
        const encoding = headers['grpc-encoding'];
        const decompress = encoding === 'gzip' ? gunzip : encoding === 'deflate' ? inflate : undefined;
        if (decompress === undefined) {
          return fail(stream, GRPC_STATUS.UNIMPLEMENTED, `message encoding '${String(encoding)}' is not supported`);
        }
        decompress(
          message,
          { maxOutputLength: maxMessageBytes },
          guarded(stream, (error: Error | null, plain: Buffer) => {
            if (error) fail(stream, GRPC_STATUS.INTERNAL, `could not decompress the request: ${error.message}`);
            else handle(stream, plain, headers);
          }),
        );
      }),
    );
  }

  /** A `grpc.health.v1.Health` request: a few bytes, uncompressed (health checkers send no more). */
  function readHealthRequest(stream: ServerHttp2Stream, then: (service: string) => void): void {
    const chunks: Buffer[] = [];
    let size = 0;
    // Under the same budgets and deadline as RLS requests: a client that never finishes its request holds little, briefly.
    const reception = guard.open(
      stream.session,
      guarded(stream, () => fail(stream, GRPC_STATUS.DEADLINE_EXCEEDED, 'the health request did not arrive in time')),
    );
    stream.once('close', () => reception.release());
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= 1024 + 5) {
        chunks.push(chunk);
        reception.add(chunk.length);
      }
    });
    stream.on(
      'end',
      guarded(stream, () => {
        reception.release();
        // Answered already (the request was late).
        if (stream.headersSent) return;
        const body = Buffer.concat(chunks);
        if (size > 1024 + 5) return fail(stream, GRPC_STATUS.RESOURCE_EXHAUSTED, 'health check request too large');
        if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
          return fail(stream, GRPC_STATUS.INTERNAL, 'expected one uncompressed message');
        }
        let service: string;
        try {
          service = decodeHealthRequest(body.subarray(5));
        } catch (error) {
          return fail(stream, GRPC_STATUS.INTERNAL, `could not decode the request: ${(error as Error).message}`);
        }
        then(service);
      }),
    );
  }

  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    const listening = () => {
      server.off('error', reject);
      resolve(options.socket === undefined ? (server.address() as AddressInfo).port : 0);
    };
    if (options.socket === undefined) server.listen(options.port, options.host, listening);
    else server.listen(options.socket, listening);
  });
  return {
    port,
    ...(tls === undefined
      ? {}
      : {
          updateTls: (material: TlsMaterial) =>
            (server as ReturnType<typeof createSecureServer>).setSecureContext(tlsServerOptions(material)),
        }),
    close(graceMs) {
      return new Promise((resolve) => {
        server.close(() => resolve());
        // GOAWAY: clients open no new streams; the ones in flight finish, then the session closes.
        for (const session of sessions) session.close();
        const cut = setTimeout(() => {
          for (const session of sessions) session.destroy();
        }, graceMs);
        cut.unref();
      });
    },
  };
}
