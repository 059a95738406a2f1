/**
 * The escrow side of the sync loop. Each push sends a lease record to a peer: its incarnation, the
 * units given to that peer (a running total), the share, the demand and — when this region needs
 * more than its share — how many units it asks for. The peer's Redis merges it and gives what it can
 * spare, in one script (escrow-lua.ts, MERGE), and answers with its own running total of units given
 * here; this region then credits that total in its own Redis (the same merge, by max). A reply lost
 * in a partition leaves the units with nobody — the peer gave them, this region has not counted
 * them — until the next push brings the total again: the limit is never exceeded, and a replayed
 * request gives nothing twice (each ask carries a stamp the peer remembers).
 */
import type { Clock } from '../../core/clock.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { Runner } from '../redis/runner.js';
import { escrowHead } from './escrow-args.js';
import { ESCROW_MERGE, ESCROW_READ } from './escrow-lua.js';
import { creditArgs, decodeRecord, pushArgs, regionsBut } from './escrow-merge-args.js';
import { proofMs } from './escrow-share.js';
import { eachGroup, groupBySlot } from './eventual-sync.js';
import { ANSWER_FIELDS, checkMergeAnswer } from './merge-answer.js';
import type { RecordPart } from './record-part.js';
import { SentRecords } from './sent-records.js';
import type { PeerLink, Replicator } from './sync-loop.js';

export type { RecordPart } from './record-part.js';

/** Options of {@link createRecordReplicator}. */
export interface RecordReplicatorOptions {
  readonly local: Runner;
  readonly localCluster: boolean;
  readonly region: string;
  readonly regions: readonly string[];
  readonly graceMs: number;
  readonly clock: Clock;
  /** The policy of each record a decision used (bounded by the caller). */
  readonly policyOf: (recordKey: string) => ResolvedPolicy | undefined;
  readonly syncIntervalMs: number;
  readonly maxClockSkewMs: number;
  /** The demand this process counted for a record since the last read (demand.ts), forgotten there. */
  readonly takeDemand: (recordKey: string) => readonly string[];
  /** Most records remembered per peer as sent (sent-records.ts). */
  readonly maxKeys: number;
  /** Hears of every transfer this region was credited (units, from which region). */
  readonly onCredit?: (recordKey: string, from: string, total: number) => void;
}

/**
 * Most records in one sync script: each call runs alone in its Redis, so a long one holds up every
 * decision queued behind it. A merge costs some 40 µs of Redis time per record (more on a loaded
 * machine): 8 keep a script well under a millisecond, about a decision's p99 on one Redis. The
 * groups go out together (pipelined), so a sync takes no more round trips for it.
 */
const SYNC_GROUP = 8;

/** Sends lease records to the other regions, asks them for units, credits what they gave (escrow mode). */
export function createRecordReplicator(o: RecordReplicatorOptions): Replicator<RecordPart> {
  const peers = regionsBut(o.regions, o.region);
  /** Ask stamps are per process: strictly increasing, so two asks in one millisecond stay distinct. */
  let lastAsk = 0;
  const askStamp = () => {
    lastAsk = Math.max(lastAsk + 1, o.clock.now());
    return lastAsk;
  };
  const sent = new SentRecords(o.maxKeys, o.syncIntervalMs);

  /** Reads one group of records (adding this process's demand to theirs) into `out`. */
  const readGroup = async (group: string[], nowMs: number, out: Map<string, RecordPart | undefined>) => {
    const args = escrowHead(nowMs, o.graceMs, o.region, peers);
    for (const k of group) for (const a of o.takeDemand(k)) args.push(a);
    const r = (await o.local.script(ESCROW_READ, group, args)) as unknown[];
    let at = 0;
    for (const k of group) {
      const [part, next] = decodeRecord(r, at, o.policyOf(k) as ResolvedPolicy, peers, nowMs, o.syncIntervalMs);
      out.set(k, part);
      at = next;
    }
  };

  /** Pushes one group of records to `peer`, then credits here what it gave back. */
  const pushGroup = async (peer: PeerLink, group: string[], items: ReadonlyMap<string, RecordPart>) => {
    const parts = group.map((k) => items.get(k) as RecordPart);
    const args = pushArgs(o, peer.region, parts, o.clock.now(), askStamp());
    const answer = checkMergeAnswer(await peer.runner.script(ESCROW_MERGE, group, args), group.length, peer.region);
    // Credit here what the peer gave (its running total), and learn that it holds its records.
    const back = o.clock.now();
    if (o.onCredit !== undefined) {
      for (const [i, k] of group.entries()) o.onCredit(k, peer.region, Number(answer[i * ANSWER_FIELDS + 1]));
    }
    await o.local.script(ESCROW_MERGE, group, creditArgs(o, peer.region, parts, answer, back));
    parts.forEach((part, i) => {
      const a = i * ANSWER_FIELDS;
      const answered = { peerInc: String(answer[a]), received: Number(answer[a + 1]) };
      sent.sent(peer.region, group[i] as string, part, back, proofMs(part.policy) / 8, answered);
    });
  };

  return {
    async read(keys) {
      const out = new Map<string, RecordPart | undefined>();
      const known = keys.filter((k) => o.policyOf(k) !== undefined);
      for (const k of keys) if (o.policyOf(k) === undefined) out.set(k, undefined);
      const now = o.clock.now();
      await eachGroup(groupBySlot(known, o.localCluster, SYNC_GROUP), (group) => readGroup(group, now, out));
      return out;
    },

    async push(peer: PeerLink, items) {
      const startedAt = o.clock.now();
      const news: string[] = [];
      for (const [k, part] of items) if (!sent.holds(peer.region, k, part, startedAt)) news.push(k);
      if (news.length === 0) {
        // The peer holds all of it: only find out that it is there (the loop reports a peer down).
        await peer.runner.command(['PING'], items.keys().next().value);
        return;
      }
      // One slot per group when either side is a cluster: the answer is merged back here too.
      const groups = groupBySlot(news, peer.cluster || o.localCluster, SYNC_GROUP);
      await eachGroup(groups, (group) => pushGroup(peer, group, items));
    },
  };
}
