import {
  createSecureServer,
  createServer,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { DEFAULT_KEEPALIVE, keepSessionAlive, limitConnectionAge } from './connection-age.js';
import type { GrpcHandle, GrpcServerOptions } from './grpc-server.js';
import { decodeHealthRequest, encodeHealthResponseFrame, HEALTH_CHECK_PATH } from './health-service.js';
import { HEALTH_WATCH_PATH } from './health-watch.js';
import { serveH2Watch } from './health-watch-streams.js';
import { createReceiveGuard } from './receive-guard.js';
import {
  createGrpcResponder,
  createRlsCallHandler,
  GRPC_STATUS,
  SHOULD_RATE_LIMIT_PATH,
  stopReading,
} from './rls-call.js';
import { certificateHasSan, type TlsMaterial, tlsServerOptions } from './tls.js';

export { GRPC_STATUS, SHOULD_RATE_LIMIT_PATH } from './rls-call.js';

/**
 * Options of {@link startH2GrpcServer}: the same as the default server's, so the service and envoy mode
 * configure either one alike.
 */
export type H2GrpcServerOptions = GrpcServerOptions;

/**
 * Serves the RLS v3 `ShouldRateLimit` unary method (and `grpc.health.v1.Health`) over Node's own HTTP/2
 * (nghttp2), with no gRPC framework at all: the calls are answered by {@link createRlsCallHandler}, the
 * code the default server answers ShouldRateLimit with, in the lean server's own words. Any gRPC client
 * (Envoy, grpc-go, grpc-js) talks to it.
 *
 * A client may leave at any point of a call (RST_STREAM, a dropped connection, GOAWAY): every handler of
 * a stream runs through `guarded`, and every answer checks that the stream can still take one, so no
 * such exit can throw out of an event handler. Unfinished messages are bounded by a `ReceiveGuard`.
 */
export async function startH2GrpcServer(options: H2GrpcServerOptions): Promise<GrpcHandle> {
  const { decider, metrics, logger } = options;
  const guard = createReceiveGuard(options.limits);
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
  const { guarded, fail, reply } = createGrpcResponder('lean', metrics, logger);
  const serveRateLimit = createRlsCallHandler({ decider, metrics, logger, guard, dialect: 'lean' });

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
    serveRateLimit(stream, headers);
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
