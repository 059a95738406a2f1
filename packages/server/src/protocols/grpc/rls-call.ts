/**
 * The lean ShouldRateLimit path: a unary call read straight off grpc-js's HTTP/2 stream (framing,
 * compression, `grpc-timeout`, the receive bounds), answered in grpc-js's own words.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Decider } from '../../core/decide.js';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';
import { createGrpcResponder, GRPC_STATUS, type GrpcResponder } from './grpc-responder.js';
import type { ReceiveGuard } from './receive-guard.js';
import { createRlsAnswer } from './rls-answer.js';
import { createBodyReader } from './rls-body-reader.js';
import { createCallListeners } from './rls-call-listeners.js';
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
  const { onData, onEnd, onClose, onReceiveTimeout } = createCallListeners({ responder, logger, guard, onBody });

  // Per call: one RlsCall and its reception; the listeners are the shared ones above.
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
