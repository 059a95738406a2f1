/**
 * Every body shape `readUsage` takes (a fetch `Response`, a web `ReadableStream`, a Node stream or any
 * async iterable, a string, a Buffer or Uint8Array) as one async iterable of byte chunks, read as it
 * arrives.
 */
import { SluiceError } from '../core/errors.js';

/** A body `readUsage` can read. */
export type LlmBody =
  | Response
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array | string>
  | string
  | Uint8Array
  | ArrayBuffer;

const encoder = new TextEncoder();

const asBytes = (chunk: unknown): Uint8Array => {
  if (typeof chunk === 'string') return encoder.encode(chunk);
  if (chunk instanceof Uint8Array) return chunk;
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  throw new SluiceError(
    'ERR_SLUICE_LLM_MALFORMED_BODY',
    `a body chunk is ${typeof chunk}: readUsage reads bytes or strings (a stream in object mode cannot be a response body)`,
  );
};

async function* fromReader(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield asBytes(value);
    }
  } finally {
    // Stopping early (an error while reading usage) cancels the source rather than leaving it open.
    await reader.cancel().catch(() => {});
  }
}

async function* fromIterable(source: AsyncIterable<unknown>): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) yield asBytes(chunk);
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** The body's bytes, chunk by chunk. A `Response` already read (bodyUsed) is a coded error. */
export function bodyChunks(body: LlmBody): AsyncIterable<Uint8Array> {
  if (typeof body === 'string' || body instanceof Uint8Array || body instanceof ArrayBuffer) return once(asBytes(body));
  if (typeof Response !== 'undefined' && body instanceof Response) {
    if (body.bodyUsed)
      throw new SluiceError(
        'ERR_SLUICE_LLM_BODY_USED',
        'the Response body was read already: pass response.clone() to readUsage, or read usage with tapUsage while forwarding',
      );
    return body.body === null ? once(new Uint8Array()) : fromReader(body.body);
  }
  if (typeof ReadableStream !== 'undefined' && body instanceof ReadableStream) return fromReader(body);
  if (body !== null && typeof body === 'object' && Symbol.asyncIterator in body) return fromIterable(body);
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `readUsage cannot read a ${body === null ? 'null' : typeof body}: pass a Response, a ReadableStream, a Node stream, an async iterable, a string or a Buffer`,
    { option: 'body' },
  );
}
