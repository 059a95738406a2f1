/**
 * The bounded wait of an adaptive limiter: FIFO per priority, the most important served first, a
 * deadline per waiter, and when full, the least important newest waiter gives its place to a more
 * important arrival.
 */
import type { AdaptiveDecision, AdaptiveRejectReason } from './decision.js';
import { fits, type PriorityBook } from './priority-book.js';

/** One request waiting for a place. */
interface Waiter {
  readonly priority: number;
  /** Settles the waiter: admitted (true) or refused with a reason. */
  settle(admitted: true | AdaptiveRejectReason): void;
}

/** The waiting requests of one limiter. */
export interface WaitQueue {
  /** Requests waiting now. */
  readonly size: number;
  /** The waiters of each priority, oldest first (read by the priority book). */
  readonly lines: readonly (readonly unknown[])[];
  /** Hands free places to waiters, most important first; a priority that does not fit lets the next try. */
  serve(book: PriorityBook, limit: number, nowMs: number): void;
  /**
   * Waits as priority `i` until a place is handed over, the timeout passes or `signal` aborts; `settle`
   * turns the outcome into the decision (taking the place, or counting the refusal).
   */
  wait(
    i: number,
    signal: AbortSignal | undefined,
    settle: (result: true | AdaptiveRejectReason) => AdaptiveDecision,
  ): Promise<AdaptiveDecision>;
}

/** Creates a queue of at most `size` waiters, each for at most `timeoutMs`, over `priorities` priorities. */
export function createWaitQueue(
  { size: capacity, timeoutMs }: { size: number; timeoutMs: number },
  priorities: number,
): WaitQueue {
  const lines: Waiter[][] = Array.from({ length: priorities }, () => []);
  let size = 0;
  const take = (i: number, at: number) => {
    size--;
    return (lines[i] as Waiter[]).splice(at, 1)[0] as Waiter;
  };
  /** Adds a waiter; answers false when the queue is full of waiters at least as important. */
  const push = (waiter: Waiter) => {
    if (size >= capacity) {
      // Full: the newest waiter of the least important priority below this one is refused instead.
      let victim = lines.length - 1;
      while (victim > waiter.priority && (lines[victim] as Waiter[]).length === 0) victim--;
      if (victim <= waiter.priority) return false;
      take(victim, (lines[victim] as Waiter[]).length - 1).settle('queue-full');
    }
    (lines[waiter.priority] as Waiter[]).push(waiter);
    size++;
    return true;
  };
  /** Removes a waiter (timed out, aborted); false when it was no longer queued. */
  const remove = (waiter: Waiter) => {
    const at = (lines[waiter.priority] as Waiter[]).indexOf(waiter);
    if (at >= 0) take(waiter.priority, at);
    return at >= 0;
  };
  return {
    get size() {
      return size;
    },
    lines,
    serve(book, limit, nowMs) {
      for (let i = 0; i < lines.length; i++)
        while ((lines[i] as Waiter[]).length > 0 && fits(book, i, limit, nowMs)) take(i, 0).settle(true);
    },
    wait: (i, signal, settle) =>
      new Promise((resolve) => {
        const waiter: Waiter = {
          priority: i,
          settle(result) {
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            resolve(settle(result));
          },
        };
        const giveUp = (reason: AdaptiveRejectReason) => remove(waiter) && waiter.settle(reason);
        const onAbort = () => giveUp('aborted');
        const timer = setTimeout(() => giveUp('queue-timeout'), timeoutMs);
        // A waiter alone does not keep the process alive.
        (timer as { unref?: () => void }).unref?.();
        signal?.addEventListener('abort', onAbort, { once: true });
        if (!push(waiter)) waiter.settle('queue-full');
      }),
  };
}
