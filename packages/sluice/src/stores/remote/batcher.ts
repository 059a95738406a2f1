/**
 * Sends store operations to `/v1/check`, several to one HTTP request: the operations that arrive
 * together share a round trip. Runtime-neutral (fetch, AbortController, queueMicrotask, setTimeout):
 * no Node built-ins, so it runs on Bun, Deno and Cloudflare Workers too.
 */
import { SluiceError } from '../../core/errors.js';
import { type FetchLike, type PostContext, postBatch, type Unit } from './post-batch.js';
import { SendQueue } from './send-queue.js';

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

/** Counts failures and reports the first of each outage to `onError` (the service answering ends an outage). */
function outageReport(
  stats: PostContext['stats'],
  onError: BatcherOptions['onError'],
): Pick<PostContext, 'fail' | 'up'> {
  let downReported = false;
  return {
    fail(error) {
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
    },
    up() {
      downReported = false;
    },
  };
}

/** Creates the batcher of one remote store: a queue of operations, the POSTs that carry them, and the stats. */
export function createBatcher(options: BatcherOptions): Batcher {
  const { batch } = options;
  const stats = { requests: 0, operations: 0, errors: 0, timeouts: 0 };
  const inFlight = new Set<Promise<void>>();
  const context: PostContext = {
    url: options.url,
    headers: { 'content-type': 'application/json', ...options.headers },
    fetch: options.fetch,
    timeoutMs: options.timeoutMs,
    maxResponseBytesPerCheck: options.maxResponseBytesPerCheck,
    stats,
    inFlight,
    ...outageReport(stats, options.onError),
  };
  const post = (units: Unit[]) => postBatch(context, units);
  const queue = new SendQueue(options.maxBatch, post);
  let group = 0;
  let closed = false;

  return {
    send(items) {
      if (closed) return Promise.reject(new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the remote store was closed'));
      return new Promise<WireResult[]>((resolve, reject) => {
        const unit: Unit = { items, resolve, reject };
        if (batch) queue.push(unit);
        else post([unit]);
      });
    },
    nextGroup: () => ++group,
    async close() {
      // Operations already queued still go out; close() resolves once every request has settled
      // (at most timeoutMs).
      closed = true;
      queue.flushPending();
      await Promise.all(inFlight);
    },
    stats,
  };
}
