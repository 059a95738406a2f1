/**
 * What each peer region was last sent of each lease record (escrow mode), so a sync pushes a record
 * only when the peer would learn something from it. Every decision marks its record changed, but
 * what a peer keeps of a push is small: this region's incarnation, the running total of units given
 * to it, and — when this region needs more — an ask. Pushing an unchanged record again only renews
 * the peer's proof that this region holds it (and, in the answer, this region's proof of the peer):
 * units received count only within PROOF of the last proof (escrow-lua.ts), so an unchanged record is
 * still pushed once per `refreshMs`, at a random point of its second half (records first pushed
 * together do not all come back in the same sync).
 *
 * Without this, a sync re-sent every record in use to every peer, and merged every answer back here:
 * 70–150 µs of this process's CPU and 45–70 µs of this region's Redis per record each sync, in bursts
 * that held up the decisions queued behind them.
 *
 * Bounded: past `maxKeys` records per peer, the one sent longest ago is forgotten (and sent again
 * at its next change).
 */
import type { RecordPart } from './escrow-sync.js';

interface Sent {
  readonly inc: string;
  readonly units: number;
  readonly to: string;
  readonly at: number;
  /** Until when the peer's proof of this record needs no renewing. */
  readonly freshUntil: number;
}

const NO_GIFT = { units: 0, to: '', at: 0 };

export class SentRecords {
  private readonly byPeer = new Map<string, Map<string, Sent>>();

  constructor(private readonly maxKeys: number) {}

  /** Whether `peer` already holds everything a push of `part` would tell it, recently enough. */
  holds(peer: string, key: string, part: RecordPart, nowMs: number): boolean {
    if (part.want > 0) return false;
    const s = this.byPeer.get(peer)?.get(key);
    if (s === undefined || nowMs >= s.freshUntil || s.inc !== part.inc) return false;
    const gift = part.given.get(peer) ?? NO_GIFT;
    return s.units === gift.units && s.to === gift.to && s.at === gift.at;
  }

  /** Records that a push of `part` to `peer` landed at `nowMs`. */
  sent(peer: string, key: string, part: RecordPart, nowMs: number, refreshMs: number): void {
    let sent = this.byPeer.get(peer);
    if (sent === undefined) {
      sent = new Map();
      this.byPeer.set(peer, sent);
    }
    const gift = part.given.get(peer) ?? NO_GIFT;
    // Deleted first, so the map's order stays the order of sending (the first key is the oldest).
    sent.delete(key);
    sent.set(key, {
      inc: part.inc,
      units: gift.units,
      to: gift.to,
      at: gift.at,
      freshUntil: nowMs + refreshMs * (0.5 + Math.random() / 2),
    });
    if (sent.size > this.maxKeys) sent.delete(sent.keys().next().value as string);
  }
}
