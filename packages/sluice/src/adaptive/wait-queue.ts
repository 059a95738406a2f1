/**
 * The bounded wait of an adaptive limiter: FIFO per priority, the most important served first, a
 * deadline per waiter, and when full, the least important newest waiter gives its place to a more
 * important arrival.
 */
import type { AdaptiveDecision, AdaptiveRejectReason } from './decision.js';
import { fits, type PriorityBook } from './priority-book.js';

/** One request waiting for a place. */
export interface Waiter {
  readonly priority: number;
  /** Settles the waiter: admitted (true) or refused with a reason. */
  settle(admitted: true | AdaptiveRejectReason): void;
}

/** The waiting requests of one limiter. */
export interface WaitQueue {
  readonly size: number;
  /** Per-priority counts (shared with the priority book). */
  readonly waiting: number[];
  /** Adds a waiter; answers false when the queue is full of waiters at least as important. */
  push(waiter: Waiter): boolean;
  /** Removes a waiter (timed out, aborted); false when it was no longer queued. */
  remove(waiter: Waiter): boolean;
  /** The first waiter of priority `i`, if any. */
  head(i: number): Waiter | undefined;
  /** Takes the first waiter of priority `i`. */
  shift(i: number): Waiter | undefined;
}

/** Creates a queue of at most `capacity` waiters over `priorities` priorities. */
export function createWaitQueue(capacity: number, waiting: number[]): WaitQueue {
  const lines: Waiter[][] = waiting.map(() => []);
  let size = 0;
  const take = (i: number, at: 'first' | 'last') => {
    const line = lines[i] as Waiter[];
    const waiter = at === 'first' ? line.shift() : line.pop();
    if (waiter !== undefined) {
      size--;
      waiting[i] = (waiting[i] as number) - 1;
    }
    return waiter;
  };
  return {
    get size() {
      return size;
    },
    waiting,
    push(waiter) {
      if (size >= capacity) {
        // Full: the newest waiter of the least important priority below this one is refused instead.
        let victim = -1;
        for (let i = lines.length - 1; i > waiter.priority; i--)
          if ((lines[i] as Waiter[]).length > 0) {
            victim = i;
            break;
          }
        if (victim < 0) return false;
        take(victim, 'last')?.settle('queue-full');
      }
      (lines[waiter.priority] as Waiter[]).push(waiter);
      size++;
      waiting[waiter.priority] = (waiting[waiter.priority] as number) + 1;
      return true;
    },
    remove(waiter) {
      const line = lines[waiter.priority] as Waiter[];
      const at = line.indexOf(waiter);
      if (at < 0) return false;
      line.splice(at, 1);
      size--;
      waiting[waiter.priority] = (waiting[waiter.priority] as number) - 1;
      return true;
    },
    head: (i) => (lines[i] as Waiter[])[0],
    shift: (i) => take(i, 'first'),
  };
}

/** Hands free places to waiters, most important first; a priority that does not fit lets the next try. */
export function serveWaiters(queue: WaitQueue, book: PriorityBook, limit: number, nowMs: number): void {
  if (queue.size === 0) return;
  for (let i = 0; i < book.names.length; i++) {
    for (let head = queue.head(i); head !== undefined; head = queue.head(i)) {
      if (!fits(book, i, limit, nowMs)) break;
      queue.shift(i);
      head.settle(true);
    }
  }
}

/**
 * Waits in `queue` as priority `i` until a place is handed over, `timeoutMs` passes or `signal` aborts;
 * `settle` turns the outcome into the decision (taking the place, or counting the refusal).
 */
export function waitInQueue(
  queue: WaitQueue,
  i: number,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  settle: (result: true | AdaptiveRejectReason) => AdaptiveDecision,
): Promise<AdaptiveDecision> {
  return new Promise((resolve) => {
    const waiter: Waiter = {
      priority: i,
      settle(result) {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(settle(result));
      },
    };
    const giveUp = (reason: AdaptiveRejectReason) => queue.remove(waiter) && waiter.settle(reason);
    const onAbort = () => giveUp('aborted');
    const timer = setTimeout(() => giveUp('queue-timeout'), timeoutMs);
    // A waiter alone does not keep the process alive.
    (timer as { unref?: () => void }).unref?.();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (!queue.push(waiter)) {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(settle('queue-full'));
    }
  });
}
