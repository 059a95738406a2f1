/**
 * Sends store operations to `/v1/check`, several to one HTTP request: the operations that arrive
 * together share a round trip. Runtime-neutral (fetch, AbortController, queueMicrotask, setTimeout):
 * no Node built-ins, so it runs on Bun, Deno and Cloudflare Workers too.
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

export interface BatcherOptions {
  url: string;
  timeoutMs: number;
  fetch: FetchLike;
  headers: Readonly<Record<string, string>>;
  batch: boolean;
  maxBatch: number;
  /** Most bytes of an answer per operation it answers (the cap of a request's answer is this × its operations). */
  maxResponseBytesPerCheck: number;
  onError: ((error: SluiceError) => void) | undefined;
}

export interface Batcher {
  /** Sends `items` (kept together in one request: a group must not be split) and resolves with their results. */
  send(items: WireItem[]): Promise<WireResult[]>;
  /** A group id no other pending operation uses. */
  nextGroup(): number;
  close(): Promise<void>;
  readonly stats: { requests: number; operations: number; errors: number; timeouts: number };
}

interface Unit {
  readonly items: WireItem[];
  resolve(results: WireResult[]): void;
  reject(error: unknown): void;
}

/**
 * A caller resumed by a reply reaches its next operation a few promise hops later, so a flush waits
 * (one microtask hop at a time) until a hop brings no new operation — at most this many hops.
 */
const MAX_HOPS = 16;
const encoder = new TextEncoder();

export function createBatcher(options: BatcherOptions): Batcher {
  const { url, timeoutMs, batch, maxBatch, maxResponseBytesPerCheck, onError } = options;
  const fetchFn = options.fetch;
  const headers = { 'content-type': 'application/json', ...options.headers };
  const stats = { requests: 0, operations: 0, errors: 0, timeouts: 0 };
  let queue: Unit[] = [];
  let queued = 0;
  let scheduled = false;
  let seen = 0;
  let hops = 0;
  let group = 0;
  let closed = false;
  let downReported = false;
  const inFlight = new Set<Promise<void>>();

  function fail(error: SluiceError): SluiceError {
    stats.errors++;
    if (error.code === 'ERR_SLUICE_STORE_TIMEOUT') stats.timeouts++;
    if (onError !== undefined && !downReported) {
      downReported = true;
      try {
        onError(error);
      } catch {
        // A throwing onError must not turn a store failure into a crash.
      }
    }
    return error;
  }

  function post(units: Unit[]): void {
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
          downReported = false;
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

  function flush(): void {
    scheduled = false;
    let units: Unit[] = [];
    let size = 0;
    for (const unit of queue) {
      if (size > 0 && size + unit.items.length > maxBatch) {
        post(units);
        units = [];
        size = 0;
      }
      units.push(unit);
      size += unit.items.length;
    }
    if (units.length > 0) post(units);
    queue = [];
    queued = 0;
  }

  function settleThenFlush(): void {
    if (queued !== seen && hops < MAX_HOPS) {
      seen = queued;
      hops++;
      queueMicrotask(settleThenFlush);
      return;
    }
    flush();
  }

  return {
    send(items) {
      if (closed) return Promise.reject(new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the remote store was closed'));
      return new Promise<WireResult[]>((resolve, reject) => {
        const unit: Unit = { items, resolve, reject };
        if (!batch) {
          post([unit]);
          return;
        }
        queue.push(unit);
        queued += items.length;
        if (queued >= maxBatch) flush();
        else if (!scheduled) {
          scheduled = true;
          seen = queued;
          hops = 0;
          queueMicrotask(settleThenFlush);
        }
      });
    },
    nextGroup: () => ++group,
    async close() {
      // Operations already queued still go out; close() resolves once every request has settled
      // (at most timeoutMs).
      closed = true;
      if (queue.length > 0) flush();
      await Promise.all(inFlight);
    },
    stats,
  };
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
