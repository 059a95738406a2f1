/**
 * The decision half of a lean ShouldRateLimit call: a complete, decompressed request message in, the
 * decision (or grpc-js's error for it) out on the stream.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { TLSSocket } from 'node:tls';
import { isSluiceError } from 'sluice';
import type { Decided, Decider } from '../../core/decide.js';
import { isStoreError } from '../../core/decide.js';
import type { Logger } from '../../observability/logger.js';
import { requestFromWire } from '../../rls/codec.js';
import { decodeRateLimitRequest, encodeDecisionFrame } from '../../rls/wire.js';
import { GRPC_STATUS, type GrpcResponder } from './grpc-responder.js';
import { certificateHasSan } from './tls.js';

/** What {@link createRlsAnswer} needs. */
export interface RlsAnswerOptions {
  readonly decider: Decider;
  readonly logger: Logger;
  readonly responder: GrpcResponder;
  /** With mutual TLS: the DNS name a client certificate must carry (UNAUTHENTICATED otherwise). */
  readonly clientSan?: string;
}

/** Decides one ShouldRateLimit request message and answers it on its stream. */
export type RlsAnswer = (stream: ServerHttp2Stream, message: Buffer, headers: IncomingHttpHeaders) => void;

/** See {@link RlsAnswer}. */
export function createRlsAnswer(options: RlsAnswerOptions): RlsAnswer {
  const { decider, logger, clientSan } = options;
  const { fail, reply } = options.responder;
  const debugDetails = process.env.GRPC_NODE_DEBUG_SEND_ERROR_DETAILS === 'true';

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

  return (stream, message, headers) => {
    let wire: ReturnType<typeof decodeRateLimitRequest>;
    try {
      wire = decodeRateLimitRequest(message);
    } catch (error) {
      const detail = debugDetails ? `: ${(error as Error).message}` : '';
      fail(stream, GRPC_STATUS.INTERNAL, `Error deserializing request${detail}`, false);
      return;
    }
    if (clientSan !== undefined && !certificateHasSan(peerCertificate(stream), clientSan)) {
      fail(stream, GRPC_STATUS.UNAUTHENTICATED, `the client certificate does not name ${clientSan}`);
      return;
    }
    // Answered at once when the decision is ready at once (the memory store): no promise, no closures.
    let decided: Decided | Promise<Decided>;
    try {
      const request = requestFromWire(wire);
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
  };
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
