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
import { demandTauMs, escrowHead, initialShare, newIncarnation, proofMs, pushItemFields } from './escrow.js';
import { ESCROW_MERGE, ESCROW_READ } from './escrow-lua.js';
import { eachGroup, groupBySlot } from './eventual-sync.js';
import { ANSWER_FIELDS, checkMergeAnswer } from './merge-answer.js';
import { demandPerPeriod, unitsToAsk } from './rebalance.js';
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

/** Per record, what MERGE answers: inc, units given, to, at, share, demand. */
const ANSWER = ANSWER_FIELDS;

/** Sends lease records to the other regions, asks them for units, credits what they gave (escrow mode). */
export function createRecordReplicator(o: RecordReplicatorOptions): Replicator<RecordPart> {
  const peers = o.regions.filter((r) => r !== o.region).sort();
  /** Ask stamps are per process: strictly increasing, so two asks in one millisecond stay distinct. */
  let lastAsk = 0;
  const askStamp = () => {
    lastAsk = Math.max(lastAsk + 1, o.clock.now());
    return lastAsk;
  };
  const sent = new SentRecords(o.maxKeys, o.syncIntervalMs);

  return {
    async read(keys) {
      const out = new Map<string, RecordPart | undefined>();
      const known = keys.filter((k) => o.policyOf(k) !== undefined);
      for (const k of keys) if (o.policyOf(k) === undefined) out.set(k, undefined);
      const now = o.clock.now();
      const head = escrowHead(now, o.graceMs, o.region, peers);
      await eachGroup(groupBySlot(known, o.localCluster, SYNC_GROUP), async (group) => {
        const args = [...head];
        for (const k of group) for (const a of o.takeDemand(k)) args.push(a);
        const r = (await o.local.script(ESCROW_READ, group, args)) as unknown[];
        let at = 0;
        for (const k of group) {
          const inc = String(r[at++]);
          if (inc === '') {
            out.set(k, undefined);
            continue;
          }
          const policy = o.policyOf(k) as ResolvedPolicy;
          const share = Number(r[at++]);
          const dr = Number(r[at++]);
          const dt = Number(r[at++]);
          const given = new Map<string, { units: number; to: string; at: number }>();
          const received = new Map<string, number>();
          for (const p of peers) {
            given.set(p, { units: Number(r[at]), to: String(r[at + 1]), at: Number(r[at + 2]) });
            received.set(p, Number(r[at + 3]));
            at += 4;
          }
          const tau = demandTauMs(policy, o.syncIntervalMs);
          const demand = demandPerPeriod(dr, dt, now, tau, policy.periodMs);
          const want = unitsToAsk({ limit: policy.limit, share, demand });
          out.set(k, { policy, inc, share, demand, want, given, received });
        }
      });
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
      await eachGroup(groupBySlot(news, peer.cluster || o.localCluster, SYNC_GROUP), async (group) => {
        const now = o.clock.now();
        const asked = askStamp();
        // PEERS of the script are the regions other than the record's owner (here: the peer).
        const args = escrowHead(now, o.graceMs, o.region, otherThan(peer.region));
        args.push(newIncarnation(), String(o.maxClockSkewMs));
        for (const k of group) {
          const part = items.get(k) as RecordPart;
          const p = part.policy;
          const gift = part.given.get(peer.region) ?? { units: 0, to: '', at: 0 };
          pushItemFields(args, p, initialShare(p.limit, o.regions, peer.region), o.syncIntervalMs, 0, 0);
          args.push(part.inc, String(gift.units), gift.to, String(gift.at), String(part.share));
          args.push(String(part.demand), String(part.want), String(asked), String(now));
        }
        const answer = checkMergeAnswer(await peer.runner.script(ESCROW_MERGE, group, args), group.length, peer.region);
        // Credit here what the peer gave (its running total), and learn that it holds its records.
        const back = o.clock.now();
        const local = escrowHead(back, o.graceMs, peer.region, peers);
        local.push(newIncarnation(), String(o.maxClockSkewMs));
        group.forEach((k, i) => {
          const part = items.get(k) as RecordPart;
          const p = part.policy;
          const a = i * ANSWER;
          pushItemFields(local, p, initialShare(p.limit, o.regions, o.region), o.syncIntervalMs, 0, 0);
          local.push(String(answer[a]), String(answer[a + 1]), String(answer[a + 2]), String(answer[a + 3]));
          local.push(String(answer[a + 4]), String(answer[a + 5]), '0', '0', String(back));
          o.onCredit?.(k, peer.region, Number(answer[a + 1]));
        });
        await o.local.script(ESCROW_MERGE, group, local);
        group.forEach((k, i) => {
          const part = items.get(k) as RecordPart;
          const answered = { peerInc: String(answer[i * ANSWER]), received: Number(answer[i * ANSWER + 1]) };
          sent.sent(peer.region, k, part, back, proofMs(part.policy) / 8, answered);
        });
      });
    },
  };

  /** The regions other than `peer`. */
  function otherThan(peer: string): string[] {
    return o.regions.filter((r) => r !== peer).sort();
  }
}
