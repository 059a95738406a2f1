/**
 * The remote store's queue of operations waiting for their request: units that arrive together go out in
 * one POST of at most `maxBatch` operations, once the callers a reply resumed have had their turn.
 */
import type { Unit } from './post-batch.js';

/**
 * A caller resumed by a reply reaches its next operation a few promise hops later, so a flush waits
 * (one microtask hop at a time) until a hop brings no new operation — at most this many hops.
 */
const MAX_HOPS = 16;

/** Operations queued for the next request(s), and when they go. */
export class SendQueue {
  private units: Unit[] = [];
  /** Operations queued (a unit holds one or more). */
  private queued = 0;
  private scheduled = false;
  /** `queued` when the last hop began: a hop that saw no new operation ends the wait. */
  private seen = 0;
  private hops = 0;
  /** Bound once, so scheduling a hop creates no closure. */
  private readonly settle = (): void => this.settleThenFlush();

  constructor(
    private readonly maxBatch: number,
    private readonly post: (units: Unit[]) => void,
  ) {}

  /** Queues a caller's unit: a full batch goes at once, else a flush is scheduled after the current hops. */
  push(unit: Unit): void {
    this.units.push(unit);
    this.queued += unit.items.length;
    if (this.queued >= this.maxBatch) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      this.seen = this.queued;
      this.hops = 0;
      queueMicrotask(this.settle);
    }
  }

  /** Sends whatever is queued now (on close). */
  flushPending(): void {
    if (this.units.length > 0) this.flush();
  }

  private settleThenFlush(): void {
    if (this.queued !== this.seen && this.hops < MAX_HOPS) {
      this.seen = this.queued;
      this.hops++;
      queueMicrotask(this.settle);
      return;
    }
    this.flush();
  }

  /** Posts the queue in requests of at most `maxBatch` operations, never splitting a unit. */
  private flush(): void {
    this.scheduled = false;
    let units: Unit[] = [];
    let size = 0;
    for (const unit of this.units) {
      if (size > 0 && size + unit.items.length > this.maxBatch) {
        this.post(units);
        units = [];
        size = 0;
      }
      units.push(unit);
      size += unit.items.length;
    }
    if (units.length > 0) this.post(units);
    this.units = [];
    this.queued = 0;
  }
}
