/**
 * Reads a response body up to a size, through the body's ReadableStream reader (fetch's standard API, so
 * Node, Bun, Deno and Workers alike): a service, proxy or impostor streaming an endless answer must not
 * grow the caller's memory without bound (an endless body took an application from 64 to 910 MB within one timeout).
 */
import { SluiceError } from '../../core/errors.js';

/**
 * The part of a ReadableStream the reader uses: declared here, structurally, so the library's types need
 * neither the DOM lib nor @types/node in a consumer's project.
 */
export interface BodyStream {
  getReader(): {
    read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>;
    cancel(reason?: unknown): Promise<void>;
  };
}

/** The part of a fetch Response the reader uses; `body` and `headers` may be absent in a test's fetch. */
export interface CappedBody {
  readonly body?: BodyStream | null;
  readonly headers?: { get(name: string): string | null };
  text(): Promise<string>;
}

/** What a body past the cap is answered with: a store failure (the limiter's `fail` policy answers). */
export function tooLarge(maxBytes: number, why: string): SluiceError {
  return new SluiceError(
    'ERR_SLUICE_STORE_UNAVAILABLE',
    `the sluice service's answer is larger than ${maxBytes} bytes (${why}); it was cut off. ` +
      'If the service (or a proxy in front of it) really sends that much, raise maxResponseBytesPerCheck',
    { option: 'maxResponseBytesPerCheck' },
  );
}

/**
 * The body as text, or a {@link tooLarge} error as soon as it passes `maxBytes`: the read stops there and
 * `abort()` drops the connection, so the rest is never received. A declared Content-Length over the cap
 * is refused before reading.
 */
export async function readCapped(res: CappedBody, maxBytes: number, abort: () => void): Promise<string> {
  const declared = Number(res.headers?.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    abort();
    throw tooLarge(maxBytes, `Content-Length ${declared}`);
  }
  const body = res.body;
  if (body === undefined || body === null) {
    // A test's or wrapper's fetch without a stream: the text is already whole, so it can only be checked.
    const text = await res.text();
    if (text.length > maxBytes) throw tooLarge(maxBytes, `${text.length} characters`);
    return text;
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      // Cancel the read and abort the request: the socket closes, so the sender stops too.
      reader.cancel().catch(() => {});
      abort();
      throw tooLarge(maxBytes, 'a longer body was being sent');
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return decoder.decode(bytes);
}

const decoder = new TextDecoder();
