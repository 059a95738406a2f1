/**
 * Micro-batching for the Redis store: requests that arrive in the same event-loop turn and can share a script go to
 * Redis as one call.
 */
import type { SluiceError } from '../../core/errors.js';
import type { ScriptItem } from './script-args.js';
import type { Script } from './scripts.js';

/** One request waiting for a script call: its items, and what to do with its part of the reply. */
export interface Job {
  readonly script: Script;
  /** Requests that may share a call (same script, same slot on a cluster, same time with the client clock). */
  readonly queueKey: string;
  readonly nowMs: number;
  readonly items: readonly ScriptItem[];
  /** How many decisions of the reply are this job's (6 integers each; a batch script's: see decode.ts). */
  readonly width: number;
  /**
   * Takes the job's decisions, which start at `offset` in the reply; `refused()` is the error for a
   * job Redis left undecided because it refused a write.
   */
  settle(reply: readonly unknown[], offset: number, refused: () => SluiceError): void;
  fail(error: unknown): void;
}

/** Most items (keys) in one batched script call. */
const MAX_BATCH = 256;

/**
 * Micro-batching: the requests that arrive in the same event-loop turn and can share a script are sent as one call
 * (independent decisions, in arrival order) — fewer commands for Redis and for the client to encode and
 * parse, and under a burst one reply instead of hundreds queued behind each other.
 */
export class Batcher {
  private readonly queues = new Map<string, { jobs: Job[]; items: number }>();
  private scheduled = false;

  /**
   * @param idle whether no script call is on the wire: then nothing is worth waiting for, and a job that
   *   finds the queues empty is sent at once (a lone caller skips the queue and the hop to the next loop
   *   phase); jobs that arrive while calls are in flight are batched (the busier, the larger the batches).
   */
  constructor(
    private readonly send: (jobs: readonly Job[]) => void,
    private readonly batching: boolean,
    private readonly idle: () => boolean = () => false,
  ) {}

  add(job: Job): void {
    if (!this.batching || (!this.scheduled && this.idle())) {
      this.send([job]);
      return;
    }
    let queue = this.queues.get(job.queueKey);
    if (queue === undefined) {
      queue = { jobs: [], items: 0 };
      this.queues.set(job.queueKey, queue);
    }
    queue.jobs.push(job);
    queue.items += job.items.length;
    if (queue.items >= MAX_BATCH) {
      this.queues.delete(job.queueKey);
      this.send(queue.jobs);
    } else if (!this.scheduled) {
      this.scheduled = true;
      // After the event loop's I/O phase: every check started by the I/O that arrived together (the
      // requests a server read in one poll, the callers one reply resumed) shares one script call —
      // one socket write instead of one per request, which is most of a check's CPU in a server. The
      // wait is within the same loop iteration: no timer, no added round trip.
      setImmediate(() => this.flush());
    }
  }

  /** Sends every queued job now. */
  flush(): void {
    this.scheduled = false;
    // Entry by entry, not `queues.clear()`: clear() gives the Map a new table and leaves the old one
    // pointing at it, so once an old table has been promoted to V8's old generation, each new table —
    // and every job, closure and promise it reaches — survives the young-generation GCs behind it. Under
    // load that chain had a third of all a check allocated promoted, and GC was most of a check's CPU.
    for (const [key, queue] of this.queues) {
      this.queues.delete(key);
      this.send(queue.jobs);
    }
  }
}
