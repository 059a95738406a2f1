/**
 * One admitted request's meter: the response's bytes pass through it as they are sent (never held),
 * and when the response ends — or the client leaves — it settles the request's token reservation.
 */
import type { TokenReservation } from '../llm/create-token-limiter.js';
import { MAX_TOKEN_COUNT, type Usage } from '../llm/usage.js';
import type { UsageReading, UsageTap } from '../llm/usage-tap.js';
import type { TokenBudgetOptions } from './token-budget-options.js';

/** What an adapter feeds with the response it sends. */
export interface TokenMeter {
  /** A chunk of the response body as it goes out. */
  push(chunk: Uint8Array | string): void;
  /**
   * The response ended (`aborted`: the client went away first). Settles once; later calls do nothing.
   * Never rejects.
   */
  end(status: number, aborted: boolean): Promise<void>;
}

const encoder = new TextEncoder();
const clamp = (n: number) => Math.min(Math.max(Math.ceil(n), 0), MAX_TOKEN_COUNT);

/**
 * The usage to charge when the body reported none: the stream's own counts where it gave them, else
 * the input estimate and the output that passed (about four characters a token). An error status
 * without usage (the upstream refused or failed) produced no tokens: the request itself stays counted.
 */
export function producedUsage(reading: UsageReading, inputEstimate: number, status: number): Usage {
  if (status >= 400 && reading.partial.outputTokens === undefined && reading.estimatedOutputTokens === 0)
    return { inputTokens: 0, outputTokens: 0 };
  return {
    inputTokens: clamp(reading.partial.inputTokens ?? inputEstimate),
    outputTokens: clamp(reading.partial.outputTokens ?? reading.estimatedOutputTokens),
  };
}

/** A meter settling `reservation` (made for `req` under `key`, with `inputEstimate` input tokens). */
export function createTokenMeter<Req>(
  options: TokenBudgetOptions<Req>,
  tap: UsageTap,
  req: Req,
  key: string,
  reservation: TokenReservation,
  inputEstimate: number,
): TokenMeter {
  let done = false;
  return {
    push(chunk) {
      if (done) return;
      tap.push(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
    },
    async end(status, aborted) {
      if (done) return;
      done = true;
      const reading = tap.end();
      const reported = reading.usage !== undefined;
      const usage = reading.usage ?? producedUsage(reading, inputEstimate, status);
      const result = await reservation.settle(usage).catch((error: unknown) => ({
        ok: false as const,
        code: 'ERR_SLUICE_STORE_UNAVAILABLE' as const,
        message: `the store failed while settling (the reservation lapses by onExpire): ${String(error)}`,
      }));
      try {
        options.onSettle?.({ req, key, usage, source: reported ? 'reported' : 'produced', aborted, result });
      } catch {
        // A throwing callback must not become an unhandled rejection after the response went out.
      }
    },
  };
}
