import { constants, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { TLSSocket } from 'node:tls';
import { gunzip, inflate } from 'node:zlib';
import { isSluiceError } from 'sluice';
import type { Decided, Decider } from '../../core/decide.js';
import { isStoreError } from '../../core/decide.js';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { requestFromWire } from '../../rls/codec.js';
import { SHOULD_RATE_LIMIT_PATH } from '../../rls/paths.js';
import { decodeRateLimitRequest, encodeDecisionFrame } from '../../rls/wire.js';
import {
  describeFailure,
  isAnswerable,
  type ReceiveFailure,
  type ReceiveGuard,
  type Reception,
} from './receive-guard.js';
import { certificateHasSan } from './tls.js';

export { SHOULD_RATE_LIMIT_PATH } from '../../rls/paths.js';

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

/**
 * How a server words its answers at the wire. `lean` is the h2 server's own. `grpc-js` is what
 * @grpc/grpc-js answers, header for header and message for message: the default server answers
 * ShouldRateLimit here, on the lean path, and every other method through grpc-js, and a client must not
 * be able to tell the two apart.
 */
export type GrpcDialect = 'lean' | 'grpc-js';

interface DialectWords {
  /** Response headers of an answer that carries a message. */
  readonly headers: OutgoingHttpHeaders;
  /** Its trailers. */
  readonly trailers: OutgoingHttpHeaders;
  /** The content type of a Trailers-Only answer. */
  readonly contentType: string;
  /** `grpc-message` as sent. */
  encodeMessage(text: string): string;
}

const WORDS: Record<GrpcDialect, DialectWords> = {
  lean: {
    headers: { ':status': 200, 'content-type': 'application/grpc' },
    trailers: { 'grpc-status': '0' },
    contentType: 'application/grpc',
    // Percent-encoded: everything outside printable ASCII, and `%` itself.
    encodeMessage: (text) => text.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c)),
  },
  // grpc-js 1.x: server-interceptors.ts (defaultResponseHeaders, defaultCompressionHeaders, sendStatus).
  'grpc-js': {
    headers: {
      ':status': 200,
      'content-type': 'application/grpc+proto',
      'grpc-accept-encoding': 'identity,deflate,gzip',
      'grpc-encoding': 'identity',
    },
    trailers: { 'grpc-status': '0', 'grpc-message': 'OK' },
    contentType: 'application/grpc+proto',
    encodeMessage: encodeURI,
  },
};

/** The options of every answer that carries a message (`respond` copies them; one object serves all). */
const WAIT_FOR_TRAILERS = Object.freeze({ waitForTrailers: true });

/** grpc-js's reading of `grpc-timeout` (server-interceptors.ts). */
const DEADLINE = /(\d{1,8})\s*([HMSmun])/;
const DEADLINE_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** Answers on raw HTTP/2 streams in one {@link GrpcDialect}; see {@link createGrpcResponder}. */
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
function abandon(stream: ServerHttp2Stream): void {
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
export function createGrpcResponder(dialect: GrpcDialect, metrics: ServiceMetrics, logger: Logger): GrpcResponder {
  const words = WORDS[dialect];
  const onTrailers = function (this: ServerHttp2Stream) {
    try {
      if (isAnswerable(this)) this.sendTrailers(words.trailers);
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
            'content-type': words.contentType,
            'grpc-status': String(code),
            'grpc-message': words.encodeMessage(message),
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
        stream.respond(words.headers, WAIT_FOR_TRAILERS);
        // `on`, not `once`: a stream asks for its trailers once, and `once` costs a wrapper per call.
        stream.on('wantTrailers', onTrailers);
        stream.end(frame);
      } catch {
        abandon(stream);
      }
    },
  };
}

/** What {@link createRlsCallHandler} needs. */
export interface RlsCallOptions {
  readonly decider: Decider;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** Bounds the request bytes a call holds until its message is complete, and for how long. */
  readonly guard: ReceiveGuard;
  readonly dialect: GrpcDialect;
  /**
   * With mutual TLS: the DNS name a client certificate must carry, checked per call (UNAUTHENTICATED
   * otherwise), as the default server does. The h2 server checks it at the handshake instead.
   */
  readonly clientSan?: string;
}

/**
 * Serves `ShouldRateLimit` calls on raw HTTP/2 streams, speaking the gRPC wire protocol directly:
 * a length-prefixed protobuf message (identity, gzip or deflate), `grpc-status` in trailers, Trailers-Only
 * answers for errors, the client's `grpc-timeout` as a deadline. A general gRPC framework spends most of
 * its time per call on machinery one unary method does not need (grpc-js: a call object, metadata copied
 * from the headers, a stream decoder, an emitter, about 8 KB of allocations per call).
 *
 * The caller has checked the path, and that the stream is a POST of `application/grpc*`.
 */
export function createRlsCallHandler(
  options: RlsCallOptions,
): (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void {
  const { decider, metrics, logger, guard, dialect, clientSan } = options;
  const { maxMessageBytes } = guard.limits;
  const grpcJs = dialect === 'grpc-js';
  const { guarded, fail, reply } = createGrpcResponder(dialect, metrics, logger);
  const debugDetails = process.env.GRPC_NODE_DEBUG_SEND_ERROR_DETAILS === 'true';

  function decideFor(stream: ServerHttp2Stream, message: Buffer, headers: IncomingHttpHeaders): void {
    let wire: ReturnType<typeof decodeRateLimitRequest>;
    try {
      wire = decodeRateLimitRequest(message);
    } catch (error) {
      if (!grpcJs) {
        fail(stream, GRPC_STATUS.INTERNAL, `could not decode the request: ${(error as Error).message}`);
      } else {
        const detail = debugDetails ? `: ${(error as Error).message}` : '';
        fail(stream, GRPC_STATUS.INTERNAL, `Error deserializing request${detail}`, false);
      }
      return;
    }
    if (clientSan !== undefined && !certificateHasSan(peerCertificate(stream), clientSan)) {
      fail(stream, GRPC_STATUS.UNAUTHENTICATED, `the client certificate does not name ${clientSan}`);
      return;
    }
    let request: ReturnType<typeof requestFromWire>;
    try {
      request = requestFromWire(wire);
    } catch (error) {
      // The lean server reads any error here as the request's; the default server maps it as a decision's.
      if (grpcJs) failDecision(stream, error);
      else fail(stream, GRPC_STATUS.INVALID_ARGUMENT, (error as Error).message);
      return;
    }
    // Answered at once when the decision is ready at once (the memory store): no promise, no closures.
    let decided: Decided | Promise<Decided>;
    try {
      decided =
        decider.decideNow === undefined
          ? decider.decide(request, 'grpc', headers)
          : decider.decideNow(request, 'grpc', headers);
    } catch (error) {
      failDecision(stream, error);
      return;
    }
    if (decided instanceof Promise) {
      decided.then(
        (answer) => reply(stream, encodeDecisionFrame(answer)),
        (error: unknown) => failDecision(stream, error),
      );
    } else reply(stream, encodeDecisionFrame(decided));
  }

  function failDecision(stream: ServerHttp2Stream, error: unknown): void {
    if (isRequestError(error)) {
      fail(stream, GRPC_STATUS.INVALID_ARGUMENT, (error as Error).message);
    } else if (isStoreError(error)) {
      logger.warn({ err: (error as Error).message }, 'store unavailable');
      fail(stream, GRPC_STATUS.UNAVAILABLE, (error as Error).message);
    } else {
      logger.error({ err: error }, 'ShouldRateLimit failed');
      fail(stream, GRPC_STATUS.INTERNAL, 'internal error');
    }
  }

  /** The request body is complete: its one message, decompressed, goes to {@link decideFor}. */
  function onBody(stream: ServerHttp2Stream, body: Buffer, headers: IncomingHttpHeaders) {
    const path = SHOULD_RATE_LIMIT_PATH;
    const length = body.length >= 5 ? body.readUInt32BE(1) : -1;
    if (grpcJs) {
      // grpc-js takes the first complete message and refuses a second one.
      if (length < 0 || body.length < 5 + length) {
        return fail(
          stream,
          GRPC_STATUS.UNIMPLEMENTED,
          `Received no request message for server streaming method ${path}`,
          false,
        );
      }
      const rest = body.length - 5 - length;
      if (rest >= 5 && rest >= 5 + body.readUInt32BE(5 + length + 1)) {
        return fail(
          stream,
          GRPC_STATUS.UNIMPLEMENTED,
          `Received a second request message for server streaming method ${path}`,
          false,
        );
      }
    } else if (length < 0) {
      return fail(stream, GRPC_STATUS.INTERNAL, 'missing request message');
    } else if (body.length !== 5 + length) {
      return fail(stream, GRPC_STATUS.INTERNAL, 'a unary call carries exactly one message');
    }
    const message = body.subarray(5, 5 + length);
    const encoding = headers['grpc-encoding'];
    // grpc-js reads any flag but 1 as uncompressed, and a compressed message without grpc-encoding as identity.
    if (grpcJs ? body[0] !== 1 || encoding === undefined || encoding === 'identity' : body[0] === 0) {
      return decideFor(stream, message, headers);
    }
    const decompress = encoding === 'gzip' ? gunzip : encoding === 'deflate' ? inflate : undefined;
    if (decompress === undefined) {
      return grpcJs
        ? fail(
            stream,
            GRPC_STATUS.UNIMPLEMENTED,
            `Received message compressed with unsupported encoding "${String(encoding)}"`,
            false,
          )
        : fail(stream, GRPC_STATUS.UNIMPLEMENTED, `message encoding '${String(encoding)}' is not supported`);
    }
    decompress(
      message,
      { maxOutputLength: maxMessageBytes },
      guarded(stream, (error: Error | null, plain: Buffer) => {
        if (error === null) return decideFor(stream, plain, headers);
        if (!grpcJs) {
          return fail(stream, GRPC_STATUS.INTERNAL, `could not decompress the request: ${error.message}`);
        }
        if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
          return fail(
            stream,
            GRPC_STATUS.RESOURCE_EXHAUSTED,
            `Received message that decompresses to a size larger than ${maxMessageBytes}`,
            false,
          );
        }
        fail(stream, GRPC_STATUS.INTERNAL, 'Failed to decompress message', false);
      }),
    );
  }

  /** The client's `grpc-timeout`: DEADLINE_EXCEEDED when the call is not answered in time, as grpc-js does. */
  function startDeadline(stream: ServerHttp2Stream, value: string): boolean {
    const match = DEADLINE.exec(value);
    if (match === null) {
      process.nextTick(
        guarded(stream, () => fail(stream, GRPC_STATUS.INTERNAL, `Invalid grpc-timeout value "${value}"`, false)),
      );
      return false;
    }
    const timer = setTimeout(
      guarded(stream, () => fail(stream, GRPC_STATUS.DEADLINE_EXCEEDED, 'Deadline exceeded', false)),
      (Number(match[1]) * (DEADLINE_UNIT_MS[match[2] as string] as number)) | 0,
    );
    stream.once('close', () => clearTimeout(timer));
    return true;
  }

  /** Ends a call whose request broke a bound: drops what it holds, answers the failure. */
  function cutOff(call: RlsCall, failure: ReceiveFailure, declared: number): void {
    call.cut = true;
    call.first = undefined;
    call.more = undefined;
    call.reception.release();
    if (grpcJs && failure === 'too-large' && declared >= 0) {
      fail(
        call.stream,
        GRPC_STATUS.RESOURCE_EXHAUSTED,
        `Received message larger than max (${declared} vs ${maxMessageBytes})`,
        false,
      );
      return;
    }
    const { status, message } = describeFailure(failure, guard.limits);
    // fail() asks the client to stop; a client that left is already closed.
    fail(call.stream, GRPC_STATUS[status], message);
  }

  function failed(stream: ServerHttp2Stream, error: unknown): void {
    logger.error({ err: error }, 'gRPC stream handler failed');
    abandon(stream);
  }

  // The stream's listeners are shared by every call (`this` is the stream; its call hangs on it): a call
  // costs one object, not a closure per listener.
  function onData(this: CallStream, chunk: Buffer): void {
    const call = this[CALL];
    try {
      if (call.cut) return;
      let failure = call.reception.add(chunk.length);
      let declared = -1;
      // The message's declared length is known from its 5-byte prefix: refuse an oversized one at once.
      if (failure === undefined && call.size < 5 && call.size + chunk.length >= 5) {
        declared = (call.first === undefined ? chunk : call.concat(chunk)).readUInt32BE(1);
        if (declared > maxMessageBytes) failure = 'too-large';
      }
      if (failure !== undefined) cutOff(call, failure, declared);
      else call.add(chunk);
    } catch (error) {
      failed(this, error);
    }
  }

  function onEnd(this: CallStream): void {
    const call = this[CALL];
    try {
      call.reception.release();
      // A stream the client reset or dropped ends here too, with whatever arrived: nobody to answer.
      if (call.cut || !isAnswerable(this)) return;
      const body = call.body();
      call.first = undefined;
      call.more = undefined;
      onBody(this, body, call.headers);
    } catch (error) {
      failed(this, error);
    }
  }

  /** The request did not arrive in time (`this` is the call: one function for every call, no closure). */
  function onReceiveTimeout(this: RlsCall): void {
    try {
      if (!this.cut) cutOff(this, 'timeout', -1);
    } catch (error) {
      failed(this.stream, error);
    }
  }

  function onClose(this: CallStream): void {
    this[CALL].reception.release();
  }

  return (stream, headers) => {
    const timeout = headers['grpc-timeout'];
    if (timeout !== undefined && !startDeadline(stream, String(timeout))) return;
    const call = new RlsCall(stream, headers);
    call.reception = guard.open(stream.session, onReceiveTimeout, call);
    (stream as CallStream)[CALL] = call;
    stream.on('close', onClose);
    stream.on('data', onData);
    stream.on('end', onEnd);
  };
}

const CALL = Symbol('sluice.rlsCall');

/** A stream with its call. */
type CallStream = ServerHttp2Stream & { [CALL]: RlsCall };

/** One ShouldRateLimit call while its request arrives: the bytes so far (most requests are one chunk). */
class RlsCall {
  first: Buffer | undefined = undefined;
  more: Buffer[] | undefined = undefined;
  size = 0;
  cut = false;
  reception!: Reception;

  constructor(
    readonly stream: ServerHttp2Stream,
    readonly headers: IncomingHttpHeaders,
  ) {}

  add(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.first === undefined) this.first = chunk;
    else if (this.more === undefined) this.more = [chunk];
    else this.more.push(chunk);
  }

  /** The bytes so far and `next`, in one buffer. */
  concat(next: Buffer): Buffer {
    return Buffer.concat([this.first as Buffer, ...(this.more ?? []), next], this.size + next.length);
  }

  body(): Buffer {
    if (this.first === undefined) return Buffer.alloc(0);
    if (this.more === undefined) return this.first;
    return Buffer.concat([this.first, ...this.more], this.size);
  }
}

function isRequestError(error: unknown): boolean {
  return (
    isSluiceError(error) && (error.code.startsWith('ERR_SLUICE_REQUEST_') || error.code === 'ERR_SLUICE_TOO_MANY_ITEMS')
  );
}

/** The client certificate of a mutual-TLS stream, as grpc-js's `getAuthContext()` reads it (authorized peers only). */
function peerCertificate(stream: ServerHttp2Stream) {
  const socket = stream.session?.socket;
  if (!(socket instanceof TLSSocket) || !socket.authorized) return undefined;
  const certificate = socket.getPeerCertificate();
  return certificate.raw ? certificate : undefined;
}
