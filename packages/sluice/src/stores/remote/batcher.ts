/**
 * Sends store operations to `/v1/check`, several to one HTTP request: the operations that arrive
 * together share a round trip. Runtime-neutral (fetch, AbortController, queueMicrotask, setTimeout):
 * no Node built-ins, so it runs on Bun, Deno and Cloudflare Workers too.
 */
import { SluiceError } from '../../core/errors.js';
import { type FetchLike, type PostContext, postBatch, type Unit } from './post-batch.js';

export type { FetchLike } from './post-batch.js';

import type { WireItem, WireResult } from './wire.js';

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

/**
 * A caller resumed by a reply reaches its next operation a few promise hops later, so a flush waits
 * (one microtask hop at a time) until a hop brings no new operation — at most this many hops.
 */
const MAX_HOPS = 16;

export function createBatcher(options: BatcherOptions): Batcher {
  const { url, timeoutMs, batch, maxBatch, maxResponseBytesPerCheck, onError } = options;
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

  const context: PostContext = {
    url,
    headers,
    fetch: options.fetch,
    timeoutMs,
    maxResponseBytesPerCheck,
    stats,
    inFlight,
    fail,
    up: () => {
      downReported = false;
    },
  };
  const post = (units: Unit[]) => postBatch(context, units);

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
