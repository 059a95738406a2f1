/**
 * The stream listeners of the lean ShouldRateLimit path, shared by every call: they gather a call's request
 * bytes within the receive bounds and hand the complete body on. This is the gRPC hot path.
 */
import type { ServerHttp2Stream } from 'node:http2';
import type { Logger } from '../../observability/logger.js';
import { abandon, GRPC_STATUS, type GrpcResponder } from './grpc-responder.js';
import { describeFailure, isAnswerable, type ReceiveFailure, type ReceiveGuard } from './receive-guard.js';
import type { BodyReader } from './rls-body-reader.js';
import { CALL, type CallStream, type RlsCall } from './rls-call-state.js';

/** What the listeners share: made once per server, never per call. */
export interface CallContext {
  readonly responder: GrpcResponder;
  readonly logger: Logger;
  readonly guard: ReceiveGuard;
  readonly onBody: BodyReader;
}

/** The listeners a stream gets; `this` is the stream (its call hangs on it) or, for the timeout, the call. */
export interface CallListeners {
  onData(this: CallStream, chunk: Buffer): void;
  onEnd(this: CallStream): void;
  onClose(this: CallStream): void;
  onReceiveTimeout(this: RlsCall): void;
}

/**
 * Makes the listeners once: a call costs one object, not a closure per listener, since each listener finds
 * its call through `this`.
 */
export function createCallListeners(context: CallContext): CallListeners {
  const { logger, guard, onBody } = context;
  const { maxMessageBytes } = guard.limits;

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
      if (failure !== undefined) cutOff(context, call, failure, declared);
      else call.add(chunk);
    } catch (error) {
      failed(logger, this, error);
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
      failed(logger, this, error);
    }
  }

  /** The request did not arrive in time (`this` is the call: one function for every call, no closure). */
  function onReceiveTimeout(this: RlsCall): void {
    try {
      if (!this.cut) cutOff(context, this, 'timeout', -1);
    } catch (error) {
      failed(logger, this.stream, error);
    }
  }

  function onClose(this: CallStream): void {
    this[CALL].reception.release();
  }

  return { onData, onEnd, onClose, onReceiveTimeout };
}

/** Ends a call whose request broke a bound: drops what it holds, answers the failure. */
function cutOff(context: CallContext, call: RlsCall, failure: ReceiveFailure, declared: number): void {
  const { responder, guard } = context;
  call.drop();
  if (failure === 'too-large' && declared >= 0) {
    const message = `Received message larger than max (${declared} vs ${guard.limits.maxMessageBytes})`;
    responder.fail(call.stream, GRPC_STATUS.RESOURCE_EXHAUSTED, message, false);
    return;
  }
  const { status, message } = describeFailure(failure, guard.limits);
  // fail() asks the client to stop; a client that left is already closed.
  responder.fail(call.stream, GRPC_STATUS[status], message);
}

function failed(logger: Logger, stream: ServerHttp2Stream, error: unknown): void {
  logger.error({ err: error }, 'gRPC stream handler failed');
  abandon(stream);
}
