/**
 * Checks that arrive together share one script call, as in the Redis store (redis/batcher.ts): a
 * lone check goes out at once; checks that arrive while a call is on the wire wait for the end of
 * the event loop's I/O phase and go out together — independent decisions, in arrival order, in one
 * round trip. Both modes' scripts decide a list of items in order, each against the state the
 * previous ones left, so a batch decides exactly as the same checks sent one by one.
 */
import type { Decision } from '../../core/decision.js';
import type { StoreItem } from '../store.js';

/** Decides items (not all-or-nothing) at one instant, in one call. */
export type DecideMany = (items: readonly StoreItem[], nowMs: number, commit: boolean) => Promise<Decision[]>;

interface Waiting {
  readonly item: StoreItem;
  resolve(d: Decision): void;
  reject(e: unknown): void;
}

/** Most items in one call. */
const MAX_BATCH = 128;

/** Batches single checks by (instant, commit, group): `groupOf` keeps a Cluster's slots apart. */
export class CheckBatcher {
  private readonly queues = new Map<string, { nowMs: number; commit: boolean; waiting: Waiting[] }>();
  private scheduled = false;
  private inFlight = 0;

  constructor(
    private readonly decide: DecideMany,
    private readonly groupOf: (key: string) => string,
  ) {}

  check(item: StoreItem, nowMs: number, commit: boolean): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => {
      const waiting: Waiting = { item, resolve, reject };
      if (!this.scheduled && this.inFlight === 0) {
        this.send(nowMs, commit, [waiting]);
        return;
      }
      const id = `${nowMs}|${commit ? 1 : 0}|${this.groupOf(item.key)}`;
      let queue = this.queues.get(id);
      if (queue === undefined) {
        queue = { nowMs, commit, waiting: [] };
        this.queues.set(id, queue);
      }
      queue.waiting.push(waiting);
      if (queue.waiting.length >= MAX_BATCH) {
        this.queues.delete(id);
        this.send(nowMs, commit, queue.waiting);
      } else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    // Entry by entry, not queues.clear(): see redis/batcher.ts (a cleared Map's replaced tables chain
    // every batch into V8's old generation).
    for (const [id, q] of this.queues) {
      this.queues.delete(id);
      this.send(q.nowMs, q.commit, q.waiting);
    }
  }

  private send(nowMs: number, commit: boolean, waiting: readonly Waiting[]): void {
    this.inFlight++;
    this.decide(
      waiting.map((w) => w.item),
      nowMs,
      commit,
    ).then(
      (decisions) => {
        this.inFlight--;
        waiting.forEach((w, i) => {
          w.resolve(decisions[i] as Decision);
        });
      },
      (error: unknown) => {
        this.inFlight--;
        for (const w of waiting) w.reject(error);
      },
    );
  }
}
