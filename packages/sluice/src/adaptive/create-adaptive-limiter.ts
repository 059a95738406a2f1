/**
 * createAdaptiveLimiter: a concurrency limit that follows measured latency, with shares per priority and an optional queue.
 */
import { createAimd } from './aimd.js';
import type { AdaptiveDecision, AdaptivePermit, AdaptiveRejectReason, AdaptiveStats } from './decision.js';
import { createGradient2 } from './gradient2.js';
import type { LimitAlgorithm, LimitSample } from './limit-algorithm.js';
import { createLimitTracker, type LimitTracker } from './limit-tracker.js';
import { type AdaptiveLimiterOptions, type ResolvedAdaptiveOptions, resolveAdaptiveOptions } from './options.js';
import { takePermit } from './permit.js';
import { admits, createPriorityBook, type PriorityBook, priorityFigures, priorityIndex } from './priority-book.js';
import { createVegas } from './vegas.js';
import { createWaitQueue, serveWaiters, type WaitQueue, waitInQueue } from './wait-queue.js';

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

/** How long a refused request is told to wait: overload passes in about a second or it does not. */
const RETRY_AFTER_MS = 1000;

function algorithmOf(options: AdaptiveLimiterOptions, name: string): LimitAlgorithm {
  if (name === 'aimd') return createAimd(options.aimd);
  if (name === 'vegas') return createVegas(options.vegas);
  return createGradient2(options.gradient2);
}

/** The parts a limiter's public face reads. */
interface Parts {
  tryAcquire: AdaptiveLimiter['tryAcquire'];
  acquire: AdaptiveLimiter['acquire'];
  tracker: LimitTracker;
  book: PriorityBook;
  queue: WaitQueue | undefined;
  resolved: ResolvedAdaptiveOptions;
  admitted: readonly number[];
  shed: readonly number[];
}

/** The limiter users hold: acquire, and read-only figures over its parts. */
function facade(parts: Parts): AdaptiveLimiter {
  const { tracker, book, queue, resolved } = parts;
  return {
    tryAcquire: parts.tryAcquire,
    acquire: parts.acquire,
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
    priorities: resolved.names,
    stats: (): AdaptiveStats => ({
      algorithm: resolved.algorithm,
      limit: tracker.limit,
      inFlight: book.total,
      queued: queue?.size ?? 0,
      priorities: priorityFigures(book, tracker.limit, parts.admitted, parts.shed),
    }),
  };
}

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
  const algorithm = algorithmOf(options, resolved.algorithm);
  const tracker = createLimitTracker(algorithm, resolved.initialLimit, resolved.minLimit, resolved.maxLimit);
  const book = createPriorityBook(names, resolved.shares);
  const queue = resolved.queue && createWaitQueue(resolved.queue.size, book.waiting);
  const admitted = names.map(() => 0);
  const shed = names.map(() => 0);
  const index = new Map(names.map((name, i) => [name, i]));
  const serve = (nowMs: number) => {
    if (queue !== undefined && queue.size > 0) serveWaiters(queue, book, tracker.limit, nowMs);
  };
  // One listener for every permit: the sample moves the limit, then the freed place goes to a waiter.
  const onRelease = (sample: LimitSample | undefined) => {
    tracker.add(sample);
    serve(clock.now());
  };

  function reject(i: number, reason: AdaptiveRejectReason): AdaptiveDecision {
    shed[i] = (shed[i] as number) + 1;
    const { limit } = tracker;
    return {
      allowed: false,
      priority: names[i] as string,
      reason,
      limit,
      inFlight: book.total,
      retryAfterMs: RETRY_AFTER_MS,
    };
  }

  function grant(i: number): AdaptivePermit {
    admitted[i] = (admitted[i] as number) + 1;
    return takePermit(book, i, clock, onRelease);
  }

  function tryAcquire(acquireOptions?: AcquireOptions): AdaptiveDecision {
    const i = priorityIndex(index, names, acquireOptions?.priority);
    const nowMs = clock.now();
    book.lastDemandMs[i] = nowMs;
    // Places may have come free for waiters without a release (a priority's demand lapsed): they are
    // served first.
    serve(nowMs);
    if (admits(book, i, tracker.limit, nowMs)) return grant(i);
    tracker.refused();
    return reject(i, 'limit');
  }

  async function acquire(acquireOptions?: AcquireOptions): Promise<AdaptiveDecision> {
    const decision = tryAcquire(acquireOptions);
    if (decision.allowed || queue === undefined) return decision;
    const i = index.get(decision.priority) as number;
    shed[i] = (shed[i] as number) - 1; // Not shed yet: it waits.
    if (acquireOptions?.signal?.aborted) return reject(i, 'aborted');
    const { timeoutMs } = resolved.queue as { timeoutMs: number };
    return waitInQueue(queue, i, timeoutMs, acquireOptions?.signal, (r) => (r === true ? grant(i) : reject(i, r)));
  }

  return facade({ tryAcquire, acquire, tracker, book, queue, resolved, admitted, shed });
}
