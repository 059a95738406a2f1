/**
 * What one peer region has not been sent yet: keys in the order they last changed, each with a
 * sequence number so that a push only clears the keys that did not change again while it was in
 * flight. Bounded: past `maxKeys` the key that changed longest ago is dropped (and counted) — in
 * eventual mode that is a window least likely to still matter; the docs state the effect on the bound.
 */
export class Pending {
  private readonly keys = new Map<string, number>();
  private seq = 0;
  dropped = 0;

  constructor(private readonly maxKeys: number) {}

  get size(): number {
    return this.keys.size;
  }

  /** Marks `key` as changed. */
  touch(key: string): void {
    this.keys.delete(key);
    this.keys.set(key, ++this.seq);
    if (this.keys.size > this.maxKeys) {
      const oldest = this.keys.keys().next().value as string;
      this.keys.delete(oldest);
      this.dropped++;
    }
  }

  /** Up to `max` keys to send, with the sequence each had when taken. */
  take(max: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, s] of this.keys) {
      if (out.size >= max) break;
      out.set(k, s);
    }
    return out;
  }

  /** Clears the keys of a push that landed, unless they changed since. */
  done(sent: ReadonlyMap<string, number>): void {
    for (const [k, s] of sent) if (this.keys.get(k) === s) this.keys.delete(k);
  }

  /** Forgets a key for good (it expired locally: nothing left to send). */
  forget(key: string): void {
    this.keys.delete(key);
  }
}
