/**
 * What a database must provide for the store kit: an atomic read-decide-write over a few keys' stored states. The kit
 * does the deciding (with the algorithms' pure steps); the backend only locks, reads and writes.
 */

/** One key's stored state as the backend keeps it: opaque text and the instant it may be deleted. */
export interface StoredState {
  readonly state: string;
  /** ms since the epoch; from then on the row equals a fresh key and may be deleted (a sweep's business). */
  readonly expiresAt: number;
}

/** What the kit writes back for one id: a new state, `null` to delete the row, `undefined` to leave it as it was. */
export type StateWrite = StoredState | null | undefined;

/** The decision step the kit runs inside a backend's transaction. */
export type StateStep<T> = (
  states: readonly (StoredState | undefined)[],
  nowMs: number,
) => { readonly writes: readonly StateWrite[]; readonly result: T };

/**
 * A database as the store kit sees it. `update` must be atomic for its ids: between reading the states and writing
 * the step's writes, no other `update` (in this process or another) may read-then-write any of the same ids. A row
 * lock (`SELECT … FOR UPDATE`), an advisory lock, a write transaction (SQLite's `BEGIN IMMEDIATE`) or a
 * compare-and-set loop that re-runs the step on conflict all do.
 */
export interface StateBackend {
  /** For logs and metrics: `'postgres'`, `'mysql'`, … */
  readonly name: string;
  /**
   * Reads the states of `ids` (each distinct; undefined for none), runs `step` with them and the time of the decision,
   * and stores its writes, atomically. `nowMs` is the caller's clock; a backend may pass the database's instead.
   * A step may run more than once (a compare-and-set retry); it has no side effects.
   */
  update<T>(ids: readonly string[], nowMs: number, step: StateStep<T>): Promise<T>;
  /** Deletes up to `max` rows expired at `nowMs`; returns how many. Called now and then by the kit, never per key. */
  sweep(nowMs: number, max: number): Promise<number>;
  /** Resolves once the backend can decide (connected, table present); rejects with a coded error saying the fix. */
  ready?(): Promise<void>;
  /** Stops what the backend started. The user's client is theirs to close. */
  close(): Promise<void>;
}
