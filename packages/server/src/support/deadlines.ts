/**
 * Deadlines that all have the same length, checked by one coarse timer instead of a timer per request:
 * entries are kept in the order they were added (so also in deadline order) in a doubly linked list, an
 * entry leaves it in O(1) when its wait ends, and a sweep every `resolutionMs` expires those at the head
 * whose time has come. A deadline fires at most `resolutionMs` late, never early.
 */
export interface DeadlineEntry {
  /** When it expires, on the list's coarse clock; 0 while not in a list. */
  deadlineAt: number;
  deadlinePrev: DeadlineEntry | undefined;
  deadlineNext: DeadlineEntry | undefined;
  /** Called once when the deadline passes (the entry has left the list). */
  expire(): void;
}

export class DeadlineList {
  private head: DeadlineEntry | undefined;
  private tail: DeadlineEntry | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The coarse clock: the time of the last sweep (ms), read once per sweep instead of once per entry. */
  private now = 0;

  constructor(
    private readonly timeoutMs: number,
    private readonly resolutionMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Starts `entry`'s deadline (it must not be in the list). */
  add(entry: DeadlineEntry): void {
    if (this.timer === undefined) {
      this.now = this.clock();
      this.timer = setInterval(() => this.sweep(), this.resolutionMs);
      this.timer.unref();
    }
    // Rounded up by one resolution: the clock may be up to that much behind the real time.
    entry.deadlineAt = this.now + this.timeoutMs + this.resolutionMs;
    entry.deadlinePrev = this.tail;
    entry.deadlineNext = undefined;
    if (this.tail === undefined) this.head = entry;
    else this.tail.deadlineNext = entry;
    this.tail = entry;
  }

  /** Ends `entry`'s wait without expiring it; nothing when it is not in the list. */
  remove(entry: DeadlineEntry): void {
    if (entry.deadlineAt === 0) return;
    entry.deadlineAt = 0;
    const { deadlinePrev: prev, deadlineNext: next } = entry;
    if (prev === undefined) this.head = next;
    else prev.deadlineNext = next;
    if (next === undefined) this.tail = prev;
    else next.deadlinePrev = prev;
    entry.deadlinePrev = undefined;
    entry.deadlineNext = undefined;
  }

  /** Stops the timer (entries left in the list never expire). */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private sweep(): void {
    this.now = this.clock();
    for (let entry = this.head; entry !== undefined && entry.deadlineAt <= this.now; entry = this.head) {
      this.remove(entry);
      entry.expire();
    }
    if (this.head === undefined) this.close();
  }
}
