/**
 * Command timeouts with one timer for the whole store instead of one per command. Every command of a
 * store has the same timeout, so deadlines arrive in the order commands were sent: a FIFO whose head is
 * always the next to expire.
 *
 * A command times out only if its reply had not arrived by its deadline. Node runs the timers phase of
 * the event loop before the poll phase that reads sockets, so after a stall longer than the timeout (a
 * GC pause, a large synchronous job) the timer would fire while the replies, long since received, still
 * sit unread in the socket buffer. So the timer only schedules the expiry, and the expiry runs in the
 * check phase (setImmediate), after the poll phase has read what arrived and settled those commands.
 */

/** A pending command's timeout. */
export interface Deadline {
  /** `performance.now()` value at which it times out. */
  readonly at: number;
  /** Set once the command settled (its timeout is then ignored). */
  done: boolean;
  readonly onTimeout: () => void;
}

/** A FIFO of deadlines served by one unref'd timer. */
export class Deadlines {
  /** Deadlines in order; served slots before `head` are emptied (see release). */
  private queue: (Deadline | undefined)[] = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(private readonly timeoutMs: number) {}

  /** Starts timing a command; mark the returned deadline `done` when it settles. */
  add(onTimeout: () => void): Deadline {
    const deadline: Deadline = { at: performance.now() + this.timeoutMs, done: false, onTimeout };
    // Drop settled deadlines from the front here too, not only when the timer fires: a caller whose
    // commands all settle within microtasks may keep the timer from running for a long while.
    const { queue } = this;
    while (this.head < queue.length && (queue[this.head] as Deadline).done) this.release();
    if (this.head > 1024 && this.head * 2 >= queue.length) {
      this.queue = queue.slice(this.head);
      this.head = 0;
    }
    this.queue.push(deadline);
    if (this.timer === undefined) this.arm(this.timeoutMs);
    return deadline;
  }

  /** Fires every timeout still pending (when the store closes). */
  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.closed = true;
    this.timer = undefined;
    const pending = this.queue.slice(this.head) as Deadline[];
    this.queue = [];
    this.head = 0;
    for (const d of pending) if (!d.done) d.onTimeout();
  }

  /**
   * Moves past the head deadline and empties its slot: a served deadline's closure holds its command's
   * arguments and reply, and up to a thousand of them kept alive here would survive young-generation
   * GCs into the old one — under load, most of a Redis check's GC cost.
   */
  private release(): void {
    this.queue[this.head] = undefined;
    this.head++;
  }

  private arm(delayMs: number): void {
    this.timer = setTimeout(() => this.expire(), Math.max(1, Math.ceil(delayMs)));
    // A pending command keeps its socket open anyway; the timer alone must not hold the process.
    this.timer.unref?.();
  }

  private expire(): void {
    // Let this loop iteration's poll phase read the replies that are already there first (see above).
    setImmediate(() => this.expireDue());
  }

  private expireDue(): void {
    this.timer = undefined;
    const now = performance.now();
    const { queue } = this;
    while (this.head < queue.length) {
      const d = queue[this.head] as Deadline;
      if (!d.done && d.at > now) break;
      this.release();
      if (!d.done) {
        d.done = true;
        d.onTimeout();
      }
    }
    // Drop the served prefix once it is half the array, so the queue stays O(pending).
    if (this.head * 2 >= queue.length) {
      this.queue = queue.slice(this.head);
      this.head = 0;
    }
    const next = this.queue[this.head];
    if (next !== undefined && !this.closed) this.arm(next.at - now);
  }
}
