/**
 * What each peer region was last sent of each lease record (escrow mode), so a sync pushes a record
 * only when the peer would learn something from it. Every decision marks its record changed, but
 * what a peer keeps of a push is small: this region's incarnation, the running total of units given
 * to it, and — when this region needs more — an ask. A record that has not moved units with a peer
 * (none given, none received) is not sent to it at all until it asks: units move only on an ask,
 * which carries the record. Pushing an unchanged record that has moved units only renews the peer's
 * proof that this region holds it (and, in the answer, this region's proof of the peer): units
 * received count only within PROOF of the last proof (escrow-lua.ts), so such a record is still
 * pushed once per `refreshMs`, at a random point of its second half (records first pushed together
 * do not all come back in the same sync).
 *
 * Without this, a sync re-sent every record in use to every peer, and merged every answer back here:
 * 70–150 µs of this process's CPU and 45–70 µs of this region's Redis per record each sync, in bursts
 * that held up the decisions queued behind them.
 *
 * An ask the peer could not serve (its running total of units given here did not grow) is not
 * repeated at every sync: it skips the next sync, then the next 2, 4 and at most 8, until the peer
 * gives something. When every region is over its share — a limit exceeded everywhere, an attack spread over
 * many keys — nobody can spare anything, and asking for every hot record at every sync would bring back
 * the cost described above. A region that needs units from a peer that just became idle gets them a
 * few syncs later at worst.
 *
 * Bounded: past `maxKeys` records per peer, the one sent longest ago is forgotten (and sent again
 * at its next change).
 */
import type { RecordPart } from './record-part.js';

interface Sent {
  readonly inc: string;
  readonly units: number;
  readonly to: string;
  readonly at: number;
  /** Until when the peer's proof of this record needs no renewing. */
  readonly freshUntil: number;
  /** What the peer answered: its incarnation and the units it has given here (running total). */
  readonly peerInc: string;
  readonly received: number;
  /** Asks in a row the peer gave nothing for, and when to ask again. */
  readonly misses: number;
  readonly askAgainAt: number;
}

/** What a push's answer says of the peer's side of a record. */
export interface PeerAnswer {
  readonly peerInc: string;
  /** Units the peer has given this region (running total). */
  readonly received: number;
}

const NO_GIFT = { units: 0, to: '', at: 0 };
/** Most syncs an unanswered ask skips (the skips double up to it: 1, 2, 4, 8). */
const MAX_ASK_WAIT = 8;

export class SentRecords {
  private readonly byPeer = new Map<string, Map<string, Sent>>();

  constructor(
    private readonly maxKeys: number,
    private readonly syncIntervalMs: number,
  ) {}

  /** Whether `peer` already holds everything a push of `part` would tell it, recently enough. */
  holds(peer: string, key: string, part: RecordPart, nowMs: number): boolean {
    const s = this.byPeer.get(peer)?.get(key);
    // An ask is news, unless the peer had nothing to give the last time and it is not time to ask again.
    if (part.want > 0 && (s === undefined || nowMs >= s.askAgainAt)) return false;
    const gift = part.given.get(peer) ?? NO_GIFT;
    // No units either way with this peer: nothing for it to credit and no proof to keep alive (units
    // move only on an ask, which goes at once). Most records never move units; they cost a sync a
    // read and no push.
    if (gift.units === 0 && (part.received.get(peer) ?? 0) === 0) return true;
    if (s === undefined || nowMs >= s.freshUntil || s.inc !== part.inc) return false;
    // With no units given, the incarnation and instant say nothing the peer needs (the first answer
    // from a peer names its incarnation, which the record then holds beside 0 units).
    return s.units === gift.units && (gift.units === 0 || (s.to === gift.to && s.at === gift.at));
  }

  /** Records that a push of `part` to `peer` landed at `nowMs`, and what the peer answered. */
  sent(peer: string, key: string, part: RecordPart, nowMs: number, refreshMs: number, answer: PeerAnswer): void {
    let sent = this.byPeer.get(peer);
    if (sent === undefined) {
      sent = new Map();
      this.byPeer.set(peer, sent);
    }
    const before = sent.get(key);
    const gift = part.given.get(peer) ?? NO_GIFT;
    const gaveNothing =
      part.want > 0 && before?.peerInc === answer.peerInc && answer.received <= (before?.received ?? 0);
    const misses = gaveNothing ? (before?.misses ?? 0) + 1 : 0;
    // Skip `n` syncs: until half an interval past the n-th (sync timers drift a little either way).
    const wait = misses === 0 ? 0 : (Math.min(2 ** (misses - 1), MAX_ASK_WAIT) + 0.5) * this.syncIntervalMs;
    // Deleted first, so the map's order stays the order of sending (the first key is the oldest).
    sent.delete(key);
    sent.set(key, {
      inc: part.inc,
      units: gift.units,
      to: gift.to,
      at: gift.at,
      freshUntil: nowMs + refreshMs * (0.5 + Math.random() / 2),
      peerInc: answer.peerInc,
      received: answer.received,
      misses,
      askAgainAt: nowMs + wait,
    });
    if (sent.size > this.maxKeys) sent.delete(sent.keys().next().value as string);
  }
}
