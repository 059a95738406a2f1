/**
 * The last step of a lean ShouldRateLimit call before its answer: the complete request body read as grpc-js
 * reads it (one message, decompressed per `grpc-encoding` within the message bound).
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { gunzip, inflate } from 'node:zlib';
import { SHOULD_RATE_LIMIT_PATH } from '../../rls/paths.js';
import { GRPC_STATUS, type GrpcResponder } from './grpc-responder.js';
import type { RlsAnswer } from './rls-answer.js';

/** Hands a call's complete request body on to be answered (or answers why it cannot be). */
export type BodyReader = (stream: ServerHttp2Stream, body: Buffer, headers: IncomingHttpHeaders) => void;

/**
 * Reads a complete request body as grpc-js does: the first complete message (a second one is refused),
 * decompressed per `grpc-encoding` within the message bound, then hands it to `answer`.
 */
export function createBodyReader(answer: RlsAnswer, responder: GrpcResponder, maxMessageBytes: number): BodyReader {
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
