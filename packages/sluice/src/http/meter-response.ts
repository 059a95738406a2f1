/**
 * Feeding a token meter from the response an adapter sends: a Node `ServerResponse` (Express, Koa,
 * Fastify, Nest, node:http — every write passes through it, streams and `end(body)` alike) or a web
 * `Response` body (Hono). Bytes are looked at as they pass, never held.
 */
import type { TokenMeter } from './token-meter.js';

/** The parts of a Node `ServerResponse` the meter uses. */
export interface MeteredNodeResponse {
  write: (...args: never[]) => unknown;
  end: (...args: never[]) => unknown;
  statusCode: number;
  readonly destroyed?: boolean;
  readonly writableFinished?: boolean;
  once(event: 'finish' | 'close', listener: () => void): unknown;
}

type Chunk = string | Uint8Array;
const isChunk = (c: unknown): c is Chunk => typeof c === 'string' || c instanceof Uint8Array;

/** Text in an encoding other than UTF-8 (`res.write(s, 'base64')`) is turned into its bytes first. */
function bytesOf(chunk: Chunk, encoding: unknown): Chunk {
  if (typeof chunk !== 'string' || typeof encoding !== 'string' || /^utf-?8$/i.test(encoding)) return chunk;
  const B = (globalThis as { Buffer?: { from(s: string, e: string): Uint8Array } }).Buffer;
  return B === undefined ? chunk : B.from(chunk, encoding);
}

/**
 * Meters `res`: what `write` and `end` send is pushed to the meter; 'finish' ends it, a 'close' before
 * it (the client left) ends it as aborted. A response already gone when this is called ends it now.
 */
export function meterNodeResponse(res: MeteredNodeResponse, meter: TokenMeter): void {
  if (res.destroyed === true) {
    void meter.end(res.statusCode, res.writableFinished !== true);
    return;
  }
  const target = res as unknown as Record<'write' | 'end', (...args: unknown[]) => unknown>;
  for (const name of ['write', 'end'] as const) {
    const original = target[name];
    target[name] = function metered(this: unknown, ...args: unknown[]) {
      const [chunk, encoding] = args;
      if (isChunk(chunk)) meter.push(bytesOf(chunk, encoding));
      return original.apply(this, args);
    };
  }
  res.once('finish', () => void meter.end(res.statusCode, false));
  res.once('close', () => {
    if (res.writableFinished !== true) void meter.end(res.statusCode, true);
  });
}

/**
 * A body that is `body` unchanged, chunk for chunk, metered: its end ends the meter, a cancel (the
 * client left) ends it as aborted, an error in the source ends it as aborted and passes the error on.
 */
export function meterWebBody(
  body: ReadableStream<Uint8Array> | null,
  status: number,
  meter: TokenMeter,
): ReadableStream<Uint8Array> | null {
  if (body === null) {
    void meter.end(status, false);
    return null;
  }
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (next.done) {
          controller.close();
          void meter.end(status, false);
          return;
        }
        meter.push(next.value);
        controller.enqueue(next.value);
      } catch (error) {
        void meter.end(status, true);
        controller.error(error);
      }
    },
    async cancel(reason) {
      void meter.end(status, true);
      await reader.cancel(reason);
    },
  });
}
