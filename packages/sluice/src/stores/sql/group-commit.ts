/**
 * Group commit for the SQL backends (PostgreSQL, MySQL): decisions that arrive while transactions are running wait and
 * then share one transaction, their steps run one after another on the rows as the earlier ones left them.
 */
import { SluiceError } from '../../core/errors.js';
import type { StateStep, StateWrite, StoredState } from '../kit/state-backend.js';

/** One waiting decision: its rows (as hex ids), its time and step, and how to answer it. */
export interface BatchEntry {
  readonly hexes: readonly string[];
  readonly nowMs: number;
  readonly step: StateStep<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Rows of a batch by hex id, as read and then as the steps leave them; `dirty`: the ids to write back. */
export interface BatchRows {
  readonly rows: Map<string, StoredState | undefined>;
  readonly dirty: Set<string>;
}

/**
 * Runs each entry's step in turn on `rows` (reading what the previous steps wrote), records the writes in the rows
 * and returns each entry's outcome: its result, or the error its step threw (that entry alone fails).
 */
export function runSteps(entries: readonly BatchEntry[], rows: BatchRows, now: (entry: BatchEntry) => number) {
  return entries.map((entry) => {
    try {
      const states = entry.hexes.map((h) => rows.rows.get(h));
      const { writes, result } = entry.step(states, now(entry));
      writes.forEach((w: StateWrite, i) => {
        const hex = entry.hexes[i] as string;
        if (w === undefined) return;
        rows.rows.set(hex, w ?? undefined);
        rows.dirty.add(hex);
      });
      return { ok: true as const, value: result };
    } catch (error) {
      return { ok: false as const, error };
    }
  });
}

/**
 * How many transactions a client of `connections` connections runs at once: half of them (so sweeps and the user's
 * own queries still find one), at most 4 — past that, decisions gain more from sharing a transaction than from
 * another connection.
 */
export function groupCommitInFlight(connections: number): number {
  return Math.max(1, Math.min(4, Math.floor(connections / 2)));
}

/** Options of {@link createBatcher}. */
export interface BatcherOptions {
  /** Most decisions in one transaction (a bound on one statement's size and one lock set). */
  maxBatch: number;
  /** Most transactions running at once from this process. */
  maxInFlight: number;
  /**
   * Most rows one transaction touches (a decision with more runs alone): decisions of many limits each cannot make a
   * statement past the server's packet limit, nor one lock set that holds up every other process.
   */
  maxRows: number;
  /**
   * Most decisions waiting for a transaction: past it a decision fails at once (ERR_SLUICE_STORE_UNAVAILABLE, the
   * failure policy answers) rather than the queue growing without bound while the database hangs.
   */
  maxWaiting: number;
}

/**
 * The bounds both SQL backends use: 128 decisions per transaction, 1,024 rows (ids of up to 1 KiB of hex each: about
 * 1 MiB of SQL), and 4,096 decisions waiting (32 full transactions) before more fail at once.
 */
export const GROUP_COMMIT_BOUNDS = { maxBatch: 128, maxRows: 1024, maxWaiting: 4096 } as const;

/** How many of the first waiting entries the next transaction takes: at least one, then within both bounds. */
function batchSize(waiting: readonly BatchEntry[], options: BatcherOptions): number {
  let rows = waiting[0]?.hexes.length ?? 0;
  let n = 1;
  while (n < waiting.length && n < options.maxBatch) {
    rows += waiting[n]?.hexes.length ?? 0;
    if (rows > options.maxRows) break;
    n++;
  }
  return n;
}

/**
 * A queue of decisions run `maxBatch` at a time by `run` (one transaction each), at most `maxInFlight` at once: one
 * caller alone gets its own transaction at once; many callers share transactions instead of queueing for connections.
 * `drained()` resolves once nothing is queued or running (a close waits for the last commits).
 */
export function createBatcher(run: (entries: BatchEntry[]) => Promise<void>, options: BatcherOptions) {
  const waiting: BatchEntry[] = [];
  let inFlight = 0;
  const idle: (() => void)[] = [];
  const pump = () => {
    while (inFlight < options.maxInFlight && waiting.length > 0) {
      const entries = waiting.splice(0, batchSize(waiting, options));
      inFlight++;
      run(entries)
        .catch((error: unknown) => {
          for (const entry of entries) entry.reject(error);
        })
        .finally(() => {
          inFlight--;
          pump();
        });
    }
    if (inFlight === 0 && waiting.length === 0) for (const done of idle.splice(0)) done();
  };
  const enqueue = (entry: BatchEntry) => {
    if (waiting.length >= options.maxWaiting) {
      entry.reject(
        new SluiceError(
          'ERR_SLUICE_STORE_UNAVAILABLE',
          `${waiting.length} decisions are already waiting for the database: it is not keeping up`,
        ),
      );
      return;
    }
    waiting.push(entry);
    pump();
  };
  const drained = () =>
    inFlight === 0 && waiting.length === 0 ? Promise.resolve() : new Promise<void>((done) => idle.push(done));
  return Object.assign(enqueue, { drained });
}
