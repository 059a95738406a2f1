/**
 * The lean ShouldRateLimit path: a unary call read straight off grpc-js's HTTP/2 stream (framing,
 * compression, `grpc-timeout`, the receive bounds), answered in grpc-js's own words.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { gunzip, inflate } from 'node:zlib';
import type { Decider } from '../../core/decide.js';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { SHOULD_RATE_LIMIT_PATH } from '../../rls/paths.js';
import { abandon, createGrpcResponder, GRPC_STATUS, type GrpcResponder } from './grpc-responder.js';
import { describeFailure, isAnswerable, type ReceiveFailure, type ReceiveGuard } from './receive-guard.js';
import { createRlsAnswer, type RlsAnswer } from './rls-answer.js';
import { CALL, type CallStream, RlsCall } from './rls-call-state.js';

export { SHOULD_RATE_LIMIT_PATH } from '../../rls/paths.js';

/** What {@link createRlsCallHandler} needs. */
export interface RlsCallOptions {
  readonly decider: Decider;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** Bounds the request bytes a call holds until its message is complete, and for how long. */
  readonly guard: ReceiveGuard;
  /** With mutual TLS: the DNS name a client certificate must carry, checked per call (UNAUTHENTICATED otherwise). */
  readonly clientSan?: string;
}

/** grpc-js's reading of `grpc-timeout` (server-interceptors.ts). */
const DEADLINE = /(\d{1,8})\s*([HMSmun])/;
const DEADLINE_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * Serves `ShouldRateLimit` calls on raw HTTP/2 streams, speaking the gRPC wire protocol directly:
 * a length-prefixed protobuf message (identity, gzip or deflate), `grpc-status` in trailers, Trailers-Only
 * answers for errors, the client's `grpc-timeout` as a deadline. grpc-js's own per-call machinery (a call
 * object, metadata copied from the headers, a stream decoder, an emitter, about 8 KB of allocations per
 * call) is most of its time for one unary method.
 *
 * The caller has checked the path, and that the stream is a POST of `application/grpc*`.
 */
export function createRlsCallHandler(
  options: RlsCallOptions,
): (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void {
  const { metrics, logger, guard } = options;
  const responder = createGrpcResponder(metrics, logger);
  const answer = createRlsAnswer({ ...options, responder });
  const onBody = createBodyReader(answer, responder, guard.limits.maxMessageBytes);
  const { maxMessageBytes } = guard.limits;

  /** Ends a call whose request broke a bound: drops what it holds, answers the failure. */
  function cutOff(call: RlsCall, failure: ReceiveFailure, declared: number): void {
    call.drop();
    if (failure === 'too-large' && declared >= 0) {
      const message = `Received message larger than max (${declared} vs ${maxMessageBytes})`;
      responder.fail(call.stream, GRPC_STATUS.RESOURCE_EXHAUSTED, message, false);
      return;
    }
    const { status, message } = describeFailure(failure, guard.limits);
    // fail() asks the client to stop; a client that left is already closed.
    responder.fail(call.stream, GRPC_STATUS[status], message);
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
      onBody(this, call.take(), call.headers);
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
    if (timeout !== undefined && !startDeadline(stream, String(timeout), responder)) return;
    const call = new RlsCall(stream, headers);
    call.reception = guard.open(stream.session, onReceiveTimeout, call);
    (stream as CallStream)[CALL] = call;
    stream.on('close', onClose);
    stream.on('data', onData);
    stream.on('end', onEnd);
  };
}

/** The client's `grpc-timeout`: DEADLINE_EXCEEDED when the call is not answered in time, as grpc-js does. */
function startDeadline(stream: ServerHttp2Stream, value: string, responder: GrpcResponder): boolean {
  const { guarded, fail } = responder;
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

/**
 * Reads a complete request body as grpc-js does: the first complete message (a second one is refused),
 * decompressed per `grpc-encoding` within the message bound, then hands it to `answer`.
 */
function createBodyReader(answer: RlsAnswer, responder: GrpcResponder, maxMessageBytes: number) {
  const { guarded, fail } = responder;
  const path = SHOULD_RATE_LIMIT_PATH;
  const unimplemented = (stream: ServerHttp2Stream, message: string) =>
    fail(stream, GRPC_STATUS.UNIMPLEMENTED, message, false);
  return (stream: ServerHttp2Stream, body: Buffer, headers: IncomingHttpHeaders) => {
    const length = body.length >= 5 ? body.readUInt32BE(1) : -1;
    if (length < 0 || body.length < 5 + length) {
      return unimplemented(stream, `Received no request message for server streaming method ${path}`);
    }
    const rest = body.length - 5 - length;
    if (rest >= 5 && rest >= 5 + body.readUInt32BE(5 + length + 1)) {
      return unimplemented(stream, `Received a second request message for server streaming method ${path}`);
    }
    const message = body.subarray(5, 5 + length);
    const encoding = headers['grpc-encoding'];
    // grpc-js reads any flag but 1 as uncompressed, and a compressed message without grpc-encoding as identity.
    if (body[0] !== 1 || encoding === undefined || encoding === 'identity') return answer(stream, message, headers);
    const decompress = encoding === 'gzip' ? gunzip : encoding === 'deflate' ? inflate : undefined;
    if (decompress === undefined) {
      return unimplemented(stream, `Received message compressed with unsupported encoding "${String(encoding)}"`);
    }
    decompress(
      message,
      { maxOutputLength: maxMessageBytes },
      guarded(stream, (error: Error | null, plain: Buffer) => {
        if (error === null) return answer(stream, plain, headers);
        if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
          const text = `Received message that decompresses to a size larger than ${maxMessageBytes}`;
          return fail(stream, GRPC_STATUS.RESOURCE_EXHAUSTED, text, false);
        }
        fail(stream, GRPC_STATUS.INTERNAL, 'Failed to decompress message', false);
      }),
    );
  };
}
