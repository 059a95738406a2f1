/**
 * createAdaptiveLimiter: a concurrency limit that follows measured latency, with shares per priority and an optional queue.
 */
import type { Clock } from '../core/clock.js';
import type { AdaptiveDecision, AdaptivePermit, AdaptiveRejectReason, AdaptiveStats } from './decision.js';
import type { LimitSample } from './limit-algorithm.js';
import { createLimitTracker } from './limit-tracker.js';
import { type AdaptiveLimiterOptions, ALGORITHMS, resolveAdaptiveOptions } from './options.js';
import { takePermit } from './permit.js';
import {
  createPriorityBook,
  fits,
  nextLapseMs,
  type PriorityBook,
  priorityFigures,
  priorityIndex,
} from './priority-book.js';
import { createWaitQueue, type WaitQueue } from './wait-queue.js';

/** What to acquire a place for. */
export interface AcquireOptions {
  /** One of the limiter's priorities. @default the least important one */
  priority?: string;
  /** Gives up waiting in the queue when aborted (a client that went away). */
  signal?: AbortSignal;
}

/** A latency-driven concurrency limiter. */
export interface AdaptiveLimiter {
  /** Takes a place, waiting in the queue if one is configured; never rejects for overload. */
  acquire(options?: AcquireOptions): Promise<AdaptiveDecision>;
  /** Takes a place now or refuses (never waits): the hot path for callers without a queue. */
  tryAcquire(options?: AcquireOptions): AdaptiveDecision;
  /** The current limit (whole requests in flight). */
  readonly limit: number;
  /** Requests holding a place now. */
  readonly inFlight: number;
  /** Requests waiting in the queue now. */
  readonly queued: number;
  /** Most requests that may wait (`queue.size`); 0 without a queue, when `acquire` never waits. */
  readonly queueSize: number;
  /** The priorities, most important first. */
  readonly priorities: readonly string[];
  /** Limit, in-flight, queue and per-priority figures. */
  stats(): AdaptiveStats;
}

/**
 * Giving the queue's waiters the places that are free: `serve` now (after a release, or before an arrival), and
 * `serveAtLapse`, a timer for when places reserved for a priority that only asked recently come free — nothing is
 * released when that demand lapses.
 */
function queueServing(
  queue: WaitQueue | undefined,
  book: PriorityBook,
  limit: () => number,
  clock: Clock,
): { serve(nowMs: number): void; serveAtLapse(nowMs: number): void } {
  let lapseTimer: ReturnType<typeof setTimeout> | undefined;
  const serveAtLapse = (nowMs: number) => {
    if (lapseTimer !== undefined || queue === undefined || queue.size === 0) return;
    const atMs = nextLapseMs(book, nowMs);
    if (atMs === undefined) return;
    lapseTimer = setTimeout(() => {
      lapseTimer = undefined;
      serve(clock.now());
    }, atMs - nowMs);
    // Like a waiter's own timeout, it does not keep the process alive.
    (lapseTimer as { unref?: () => void }).unref?.();
  };
  const serve = (nowMs: number) => {
    if (queue === undefined || queue.size === 0) return;
    queue.serve(book, limit(), nowMs);
    serveAtLapse(nowMs);
  };
  return { serve, serveAtLapse };
}

/** How long a refused request is told to wait: overload passes in about a second or it does not. */
const RETRY_AFTER_MS = 1000;

/**
 * Creates an adaptive limiter.
 * @example
 * const limiter = createAdaptiveLimiter({ algorithm: 'gradient2', priorities: { critical: 0.5, batch: 0.5 } });
 * const permit = await limiter.acquire({ priority: 'critical' });
 * if (!permit.allowed) return reply503(permit.retryAfterMs);
 * try { await work(); permit.release('success'); } catch (e) { permit.release('dropped'); throw e; }
 */
export function createAdaptiveLimiter(options: AdaptiveLimiterOptions = {}): AdaptiveLimiter {
  const resolved = resolveAdaptiveOptions(options);
  const { clock, names } = resolved;
  const algorithm = ALGORITHMS[resolved.algorithm](options);
  const tracker = createLimitTracker(algorithm, resolved.initialLimit, resolved.minLimit, resolved.maxLimit);
  const queue = resolved.queue && createWaitQueue(resolved.queue, names.length);
  const book = createPriorityBook(names, resolved.shares, queue?.lines ?? names.map(() => []));
  const { serve, serveAtLapse } = queueServing(queue, book, () => tracker.limit, clock);
  // One listener for every permit: the sample moves the limit, then the freed place goes to a waiter.
  const onRelease = (sample: LimitSample | undefined) => {
    tracker.add(sample);
    serve(clock.now());
  };
  const grant = (i: number): AdaptivePermit => takePermit(book, i, clock, onRelease);

  function reject(i: number, reason: AdaptiveRejectReason): AdaptiveDecision {
    book.shed[i] = (book.shed[i] as number) + 1;
    return {
      allowed: false,
      priority: names[i] as string,
      reason,
      limit: tracker.limit,
      inFlight: book.total,
      retryAfterMs: RETRY_AFTER_MS,
    };
  }

  /** Whether priority `i` gets a place now; a refusal marks the limit as in use. */
  function admitsNow(i: number): boolean {
    const nowMs = clock.now();
    book.lastDemandMs[i] = nowMs;
    // Places may have come free for waiters without a release (a priority's demand lapsed): they are
    // served first.
    serve(nowMs);
    if (fits(book, i, tracker.limit, nowMs, true)) return true;
    tracker.refused();
    return false;
  }

  function tryAcquire(acquireOptions?: AcquireOptions): AdaptiveDecision {
    const i = priorityIndex(book, acquireOptions?.priority);
    return admitsNow(i) ? grant(i) : reject(i, 'limit');
  }

  async function acquire(acquireOptions?: AcquireOptions): Promise<AdaptiveDecision> {
    const i = priorityIndex(book, acquireOptions?.priority);
    if (admitsNow(i)) return grant(i);
    if (queue === undefined) return reject(i, 'limit');
    const signal = acquireOptions?.signal;
    if (signal?.aborted) return reject(i, 'aborted');
    const waiting = queue.wait(i, signal, (r) => (r === true ? grant(i) : reject(i, r)));
    serveAtLapse(clock.now());
    return waiting;
  }

  return {
    tryAcquire,
    acquire,
    get limit() {
      return tracker.limit;
    },
    get inFlight() {
      return book.total;
    },
    get queued() {
      return queue?.size ?? 0;
    },
    queueSize: resolved.queue?.size ?? 0,
    priorities: names,
    stats: (): AdaptiveStats => ({
      algorithm: resolved.algorithm,
      limit: tracker.limit,
      inFlight: book.total,
      queued: queue?.size ?? 0,
      priorities: priorityFigures(book, tracker.limit),
    }),
  };
}
