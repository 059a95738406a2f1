/**
 * One POST of batched store operations to `/v1/check`: sent as bytes under a deadline, the answer read with its
 * size capped, each caller handed its own results, failures turned into coded store errors.
 */
import { SluiceError } from '../../core/errors.js';
import { type CappedBody, readCapped } from './read-capped.js';
import { checkResults, type WireItem, type WireResult } from './wire.js';

/**
 * The part of `fetch` the store uses. The answer is read through `body` (a ReadableStream) so its size
 * can be capped while it arrives; a fetch whose responses have no `body` is read with `text()`.
 */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body: Uint8Array; signal: AbortSignal },
) => Promise<{ ok: boolean; status: number; text(): Promise<string> } & CappedBody>;

/** Operations sent together by one caller (a group must not be split). */
export interface Unit {
  readonly items: WireItem[];
  resolve(results: WireResult[]): void;
  reject(error: unknown): void;
}

/** What a POST needs from its batcher. */
export interface PostContext {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly fetch: FetchLike;
  readonly timeoutMs: number;
  readonly maxResponseBytesPerCheck: number;
  readonly stats: { requests: number; operations: number; errors: number; timeouts: number };
  /** Requests not settled yet (close() waits for them). */
  readonly inFlight: Set<Promise<void>>;
  /** Counts a failure (and reports the first of an outage); returns it. */
  fail(error: SluiceError): SluiceError;
  /** The service answered: the next failure starts a new outage. */
  up(): void;
}

const encoder = new TextEncoder();

/** Sends `units` as one POST and settles each with its own results, or all with one coded error. */
export function postBatch(context: PostContext, units: Unit[]): void {
  // `fetch` taken out of the context: called as context.fetch(), its `this` would be the context.
  const { url, headers, timeoutMs, maxResponseBytesPerCheck, stats, inFlight, fail, fetch: fetchFn } = context;
  const items = units.flatMap((u) => u.items);
  stats.requests++;
  stats.operations += items.length;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  // A pending request keeps its socket open anyway; the timer alone must not hold a Node process.
  (timer as { unref?: () => void }).unref?.();
  let sent: ReturnType<FetchLike>;
  try {
    // Called unbound: Workers' fetch refuses any `this` but the global one ("Illegal invocation").
    // Bytes, not a string: Node's fetch sent a string body in a second write that waited on a delayed
    // ACK (13 ms per request on loopback, 4 ms as bytes). Not an explicit Content-Length too, though
    // faster still: with it, requests on a busy machine lost their effect (the conformance suite).
    const body = encoder.encode(JSON.stringify({ checks: items }));
    sent = fetchFn(url, {
      method: 'POST',
      headers,
      body,
      signal: controller.signal,
    });
  } catch (error) {
    sent = Promise.reject(error);
  }
  const abort = () => controller.abort();
  const done = sent
    .then(async (res) => {
      if (!res.ok) throw await httpError(res, abort);
      // Proportional to the operations: a batch of 100 may be 100 times longer than one check's answer.
      const text = await readCapped(res, maxResponseBytesPerCheck * items.length, abort);
      let body: { results?: unknown };
      try {
        body = JSON.parse(text) as { results?: unknown };
      } catch {
        throw new SluiceError(
          'ERR_SLUICE_STORE_UNAVAILABLE',
          'the sluice service answered with a body that is not JSON',
        );
      }
      return checkResults(body?.results, items.length);
    })
    .then(
      (results) => {
        context.up();
        let at = 0;
        for (const unit of units) {
          unit.resolve(results.slice(at, at + unit.items.length));
          at += unit.items.length;
        }
      },
      (error: unknown) => {
        const e = fail(
          timedOut
            ? new SluiceError('ERR_SLUICE_STORE_TIMEOUT', `the sluice service did not answer within ${timeoutMs} ms`)
            : error instanceof SluiceError
              ? error
              : new SluiceError(
                  'ERR_SLUICE_STORE_UNAVAILABLE',
                  `the sluice service is unreachable: ${messageOf(error)}`,
                  {
                    cause: error,
                  },
                ),
        );
        for (const unit of units) unit.reject(e);
      },
    )
    .finally(() => {
      clearTimeout(timer);
      inFlight.delete(done);
    });
  inFlight.add(done);
}

/** Most of an error answer read for its detail: an error page is not worth more. */
const MAX_ERROR_BYTES = 8192;
/** Most of the service's error message repeated in ours. */
const MAX_DETAIL_CHARS = 512;

async function httpError(res: { status: number } & CappedBody, abort: () => void): Promise<SluiceError> {
  let detail = '';
  try {
    const body = JSON.parse(await readCapped(res, MAX_ERROR_BYTES, abort)) as {
      error?: { code?: unknown; message?: unknown };
    };
    const { code, message } = body?.error ?? {};
    if (typeof message === 'string') {
      detail = `: ${typeof code === 'string' ? code.slice(0, 64) : ''} ${message.slice(0, MAX_DETAIL_CHARS)}`;
    }
  } catch {
    // Not JSON (a proxy's error page), or too long to be worth reading: the status says enough.
  }
  if (res.status === 400 || res.status === 413) {
    // The service refused the request itself: a bug or a version mismatch, not an outage.
    return new SluiceError(
      'ERR_SLUICE_SERVICE_REJECTED',
      `the sluice service refused the request (HTTP ${res.status})${detail}`,
    );
  }
  return new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `the sluice service answered HTTP ${res.status}${detail}`);
}

function messageOf(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}
