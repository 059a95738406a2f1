/**
 * What one peer region has not been sent yet: keys in the order of their oldest change not yet
 * sent, each with a sequence number (so a push only clears the keys that did not change again while
 * it was in flight) and the instant of that oldest change (so the loop measures the real replication
 * lag: from a change here to the peer holding it). A push takes the keys that have waited longest.
 * Bounded: past `maxKeys` the key waiting longest is dropped (and counted) — in eventual mode the
 * oldest window, the least likely to still matter; the docs state the effect on the bound.
 *
 * A key changed again only gets a new sequence number, in place: every decision touches its key,
 * and moving it in the map (delete, set) for each would be most of what a decision costs here.
 */
interface Entry {
  seq: number;
  since: number;
}

export class Pending {
  private readonly keys = new Map<string, Entry>();
  private seq = 0;
  dropped = 0;

  constructor(private readonly maxKeys: number) {}

  get size(): number {
    return this.keys.size;
  }

  /** Marks `key` as changed at `now`. */
  touch(key: string, now: number): void {
    const old = this.keys.get(key);
    if (old !== undefined) {
      old.seq = ++this.seq;
      return;
    }
    this.keys.set(key, { seq: ++this.seq, since: now });
    if (this.keys.size > this.maxKeys) {
      const oldest = this.keys.keys().next().value as string;
      this.keys.delete(oldest);
      this.dropped++;
    }
  }

  /** Whether `key` waits to be sent. */
  has(key: string): boolean {
    return this.keys.has(key);
  }

  /** Up to `max` keys to send, with the sequence each had when taken. */
  take(max: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, e] of this.keys) {
      if (out.size >= max) break;
      out.set(k, e.seq);
    }
    return out;
  }

  /**
   * A push of what was read at `readAt` landed at `now`: clears the keys that did not change since
   * (a key that did still owes its later changes, from `readAt` on). Returns the longest lag delivered.
   */
  done(sent: ReadonlyMap<string, number>, readAt: number, now: number): number {
    let lag = 0;
    for (const [k, seq] of sent) {
      const e = this.keys.get(k);
      if (e === undefined) continue;
      lag = Math.max(lag, now - e.since);
      if (e.seq === seq) this.keys.delete(k);
      else e.since = Math.max(e.since, readAt);
    }
    return lag;
  }

  /** Forgets a key for good (it expired here: nothing left to send). */
  forget(key: string): void {
    this.keys.delete(key);
  }
}
