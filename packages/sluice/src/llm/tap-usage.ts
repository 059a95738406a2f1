/**
 * `tapUsage`: forwards a response body unchanged — the same chunks, byte for byte, as they come —
 * while reading its usage, for a proxy or middleware that must pass a stream on and charge at its end.
 */
import { bodyChunks, type LlmBody } from './body-chunks.js';
import { createUsageTap, type UsageReading, type UsageReadOptions } from './usage-tap.js';

/** A body being forwarded and what it will have cost. */
export interface TappedBody {
  /** The same bytes as the source, chunk for chunk; cancelling it cancels the source. */
  body: ReadableStream<Uint8Array>;
  /**
   * Resolves once the body ended, failed or was cancelled (a client that left): the reading then holds
   * what passed until that moment. Never rejects.
   */
  usage: Promise<UsageReading>;
}

/**
 * Wraps `source` so its usage is read as it is forwarded.
 *
 * @example
 * ```ts
 * const upstream = await fetch(url, init);
 * const { body, usage } = tapUsage(upstream, { provider: 'anthropic' });
 * usage.then((r) => reservation.settle(r.usage ? r.usage.inputTokens + r.usage.outputTokens : estimate));
 * return new Response(body, upstream);
 * ```
 */
export function tapUsage(source: LlmBody, options: UsageReadOptions): TappedBody {
  const tap = createUsageTap(options);
  const chunks = bodyChunks(source)[Symbol.asyncIterator]();
  let resolve!: (reading: UsageReading) => void;
  const usage = new Promise<UsageReading>((r) => {
    resolve = r;
  });
  const finish = () => resolve(tap.end());
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (next.done) {
          finish();
          controller.close();
          return;
        }
        tap.push(next.value);
        controller.enqueue(next.value);
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    async cancel(reason) {
      finish();
      await chunks.return?.(reason);
    },
  });
  return { body, usage };
}
