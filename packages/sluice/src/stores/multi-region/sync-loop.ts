/**
 * The sync loop: every `intervalMs`, what this region changed is read from its Redis and written to
 * every other region's Redis. It runs beside the decisions and never in their way: decisions only
 * mark keys as changed (a Map insert); a peer that is slow or cut off only delays its own pushes
 * (one push in flight per peer, the others go on), and the keys it missed stay pending until it
 * answers again — a partition heals by itself, and since merges are idempotent, sending a key twice
 * is harmless.
 */
import type { Clock } from '../../core/clock.js';
import { isSluiceError, type SluiceError } from '../../core/errors.js';
import type { Runner } from '../redis/runner.js';
import { Pending } from './pending.js';

/** Another region, as the sync loop reaches it. */
export interface PeerLink {
  readonly region: string;
  readonly runner: Runner;
  readonly cluster: boolean;
}

/** How a mode reads and sends its state: eventual counters or escrow lease records. */
export interface Replicator<P> {
  /** This region's own part of each key (undefined when the key is gone here). */
  read(keys: readonly string[]): Promise<Map<string, P | undefined>>;
  /** Writes them into a peer's Redis (an idempotent merge there). */
  push(peer: PeerLink, items: ReadonlyMap<string, P>): Promise<void>;
}

/** What the loop knows of one peer, for the dashboard, metrics and `bound()`. */
export interface PeerStatus {
  readonly region: string;
  /** Pushes that landed / failed. */
  readonly pushes: number;
  readonly failures: number;
  /** True while the last push failed: the peer is down or cut off (a partition). */
  readonly down: boolean;
  /** Time since the last push that landed (ms), or null before the first. The sync lag. */
  readonly lastSyncAgoMs: number | null;
  /** Duration of the last push that landed, and the longest seen (ms): read here + write there. */
  readonly lastPushMs: number | null;
  readonly maxPushMs: number;
  /**
   * Replication lag, measured: from a change here to the push that carried it landing there — the
   * sync interval, the timer's lateness, a push in flight and the push itself. The last push's
   * longest, and the longest seen. Δ of the eventual bound.
   */
  readonly lastLagMs: number | null;
  readonly maxLagMs: number;
  /** Keys changed here and not yet sent there. */
  readonly pendingKeys: number;
  /** Keys dropped because the pending set was full (a long partition with many keys). */
  readonly droppedKeys: number;
  /**
   * The code of the last failed push, null before any: the sync's own (`ERR_SLUICE_MULTI_REGION_REPLY_TOO_LARGE`,
   * `ERR_SLUICE_MULTI_REGION_BAD_REPLY`), else `ERR_SLUICE_MULTI_REGION_SYNC` (the peer's Redis refused,
   * or could not be reached).
   */
  readonly lastErrorCode: string | null;
}

/** The first error of the sync's own in `error`'s chain of causes (reply-bound.ts, merge-answer.ts). */
export function syncCauseOf(error: unknown): SluiceError | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (isSluiceError(e) && e.code.startsWith('ERR_SLUICE_MULTI_REGION_')) return e;
  }
  return undefined;
}

interface PeerState {
  readonly link: PeerLink;
  readonly pending: Pending;
  inFlight: boolean;
  pushes: number;
  failures: number;
  down: boolean;
  /** Failures since the last push that went through: the backoff doubles with each. */
  failuresInRow: number;
  /** No push to this peer before this instant (backoff after a failure). */
  retryAt: number;
  lastErrorCode: string | null;
  lastOkAt: number | null;
  lastPushMs: number | null;
  maxPushMs: number;
  lastLagMs: number | null;
  maxLagMs: number;
}

/** The longest wait between pushes to a peer that keeps failing. */
const MAX_BACKOFF_MS = 30_000;

/** Most keys one push carries; more wait for the next tick (or the one right after, see tick()). */
const BATCH = 2000;

/** Options of {@link SyncLoop}. */
export interface SyncLoopOptions<P> {
  readonly peers: readonly PeerLink[];
  readonly intervalMs: number;
  readonly clock: Clock;
  readonly maxPendingKeys: number;
  readonly replicator: Replicator<P>;
  /** Push failures (a peer down or cut off), reported once per outage of that peer. */
  readonly onError: ((error: unknown, region: string) => void) | undefined;
}

/** Replicates changed keys to every peer, on an unref'd timer. */
export class SyncLoop<P> {
  private readonly peers: PeerState[];
  /**
   * Keys changed since the last tick, each with the instant of its first change: handed to every
   * peer's pending set when the next tick starts. A decision writes one map, not one per peer.
   */
  private changed = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: SyncLoopOptions<P>) {
    this.peers = options.peers.map((link) => ({
      link,
      pending: new Pending(options.maxPendingKeys),
      inFlight: false,
      pushes: 0,
      failures: 0,
      down: false,
      failuresInRow: 0,
      retryAt: 0,
      lastErrorCode: null,
      lastOkAt: null,
      lastPushMs: null,
      maxPushMs: 0,
      lastLagMs: null,
      maxLagMs: 0,
    }));
  }

  /** Marks a key as changed here: every peer gets it at the next tick. */
  touch(key: string): void {
    if (this.changed.has(key)) return;
    this.changed.set(key, this.options.clock.now());
    if (this.changed.size > this.options.maxPendingKeys) {
      // As a full pending set does: the key waiting longest goes, counted for every peer.
      this.changed.delete(this.changed.keys().next().value as string);
      for (const p of this.peers) p.pending.dropped++;
    }
  }

  /** Hands the keys changed since the last tick to every peer's pending set. */
  private absorb(): void {
    if (this.changed.size === 0) return;
    const changed = this.changed;
    // A fresh map, once per tick: the old one is dropped whole (clear() would chain tables, see redis/batcher.ts).
    this.changed = new Map();
    for (const p of this.peers) for (const [key, since] of changed) p.pending.touch(key, since);
  }

  /** Starts ticking every intervalMs. */
  start(): void {
    if (this.stopped || this.timer !== undefined || this.peers.length === 0) return;
    this.schedule(this.options.intervalMs);
  }

  /** Runs one tick now and waits for every push it started (tests, close, benchmarks). */
  async flush(): Promise<void> {
    await this.running;
    this.running = this.tick(true);
    await this.running;
  }

  /** Stops the timer and waits for the pushes in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Per-peer state. */
  status(): PeerStatus[] {
    const now = this.options.clock.now();
    return this.peers.map((p) => ({
      region: p.link.region,
      pushes: p.pushes,
      failures: p.failures,
      down: p.down,
      lastSyncAgoMs: p.lastOkAt === null ? null : Math.max(0, now - p.lastOkAt),
      lastPushMs: p.lastPushMs,
      maxPushMs: p.maxPushMs,
      lastLagMs: p.lastLagMs,
      maxLagMs: p.maxLagMs,
      pendingKeys: p.pending.size + this.notPendingIn(p.pending),
      droppedKeys: p.pending.dropped,
      lastErrorCode: p.lastErrorCode,
    }));
  }

  /** Keys changed since the last tick that `pending` does not hold yet. */
  private notPendingIn(pending: Pending): number {
    let n = 0;
    for (const key of this.changed.keys()) if (!pending.has(key)) n++;
    return n;
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.tick(false).finally(() => {
        if (!this.stopped) this.schedule(this.options.intervalMs);
      });
    }, delayMs);
    this.timer.unref?.();
  }

  /**
   * One round: read, once, the keys any idle peer is owed, then push to each idle peer without
   * waiting for the others. With `wait`, also waits for those pushes (flush).
   */
  private async tick(wait: boolean): Promise<void> {
    this.absorb();
    const tickAt = this.options.clock.now();
    const idle = this.peers.filter((p) => !p.inFlight && p.pending.size > 0 && (wait || p.retryAt <= tickAt));
    if (idle.length === 0) return;
    const batches = idle.map((p) => p.pending.take(BATCH));
    const union = new Set<string>();
    for (const b of batches) for (const k of b.keys()) union.add(k);
    let values: Map<string, P | undefined>;
    const readAt = this.options.clock.now();
    try {
      values = await this.options.replicator.read([...union]);
    } catch {
      return; // This region's Redis is down: nothing to send; the keys stay pending.
    }
    for (const [k, v] of values) if (v === undefined) for (const p of this.peers) p.pending.forget(k);
    const pushes = idle.map((peer, i) => this.pushTo(peer, batches[i] as Map<string, number>, values, readAt));
    if (wait) await Promise.all(pushes);
  }

  private async pushTo(
    peer: PeerState,
    batch: Map<string, number>,
    values: Map<string, P | undefined>,
    readAt: number,
  ): Promise<void> {
    const items = new Map<string, P>();
    for (const k of batch.keys()) {
      const v = values.get(k);
      if (v !== undefined) items.set(k, v);
    }
    if (items.size === 0) return;
    peer.inFlight = true;
    try {
      await this.options.replicator.push(peer.link, items);
      const now = this.options.clock.now();
      const took = now - readAt;
      const lag = peer.pending.done(batch, readAt, now);
      peer.lastLagMs = lag;
      peer.maxLagMs = Math.max(peer.maxLagMs, lag);
      peer.down = false;
      peer.failuresInRow = 0;
      peer.retryAt = 0;
      peer.pushes++;
      peer.lastOkAt = readAt;
      peer.lastPushMs = took;
      peer.maxPushMs = Math.max(peer.maxPushMs, took);
    } catch (error) {
      // A peer that answers errors (read-only after a failover, full, not Redis at all) is retried with
      // exponential backoff; its keys stay pending, and decisions here go on meanwhile.
      peer.failures++;
      peer.failuresInRow++;
      peer.lastErrorCode = syncCauseOf(error)?.code ?? 'ERR_SLUICE_MULTI_REGION_SYNC';
      const backoff = Math.min(MAX_BACKOFF_MS, this.options.intervalMs * 2 ** Math.min(peer.failuresInRow - 1, 16));
      peer.retryAt = this.options.clock.now() + backoff;
      if (!peer.down) this.options.onError?.(error, peer.link.region);
      peer.down = true;
    } finally {
      peer.inFlight = false;
    }
  }
}
