/**
 * What the gateway settles an exchange at, from how it ended: the usage the body reported; what passed,
 * when the upstream ended the body itself; the reservation's output, when the stream was cut.
 */
import type { Usage, UsageReading } from 'sluice/llm';
import type { LlmRequest } from './gateway-llm-request.js';

/** How an exchange ended, as the gateway saw it. */
export interface ExchangeEnd {
  /** The upstream's status (0 when no answer came). */
  readonly status: number;
  /** The upstream ended the body itself (not a client that left, a drop or a stall). */
  readonly ended: boolean;
  /** The request's body was handed to the upstream's connection whole: it may be generating. */
  readonly sent: boolean;
}

/**
 * The usage to settle at, or `undefined` to cancel (the upstream never had the request).
 *
 * Why the reservation's output for a cut stream: the upstream generates until it sees the connection
 * close, so it produced more than reached the gateway — a chunk or two, or the whole answer for a JSON
 * body the client stopped waiting for — and no count of that comes back once the connection is closed.
 * Reading on after the client left would get the provider's count, but only by letting the model
 * generate the whole answer, which the key would pay for. The output limit the request set (or the
 * default reserved) is the only bound the gateway knows the upstream keeps, so that is charged: never
 * below what was generated, and no more than was reserved. A stream the upstream ended is exact: all it
 * produced passed the gateway and was counted. The input of an OpenAI stream that carried no usage
 * stays the estimate (no count of it exists before the last event).
 */
export function usageToSettle(
  reading: UsageReading | undefined,
  request: LlmRequest,
  end: ExchangeEnd,
): Usage | undefined {
  if (reading === undefined) {
    return end.sent ? { inputTokens: request.inputTokens, outputTokens: request.maxOutputTokens } : undefined;
  }
  if (reading.usage !== undefined) return reading.usage;
  const produced = Math.max(reading.partial.outputTokens ?? 0, reading.estimatedOutputTokens);
  // An error answer generated nothing; the request itself stays counted.
  if (end.status >= 400 && produced === 0) return { inputTokens: 0, outputTokens: 0 };
  const inputTokens = reading.partial.inputTokens ?? request.inputTokens;
  return { inputTokens, outputTokens: end.ended ? produced : Math.max(produced, request.maxOutputTokens) };
}
