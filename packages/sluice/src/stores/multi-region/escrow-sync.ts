/**
 * The escrow side of the sync loop: sends each lease record's incarnation, the units given to each
 * peer, the share and the demand; records the peers' answers (which prove they still hold their
 * records); and gives units to regions that need them (rebalance.ts).
 */
import type { Clock } from '../../core/clock.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { Runner } from '../redis/runner.js';
import { escrowHead, initialShare, leaseTtlMs, newIncarnation } from './escrow.js';
import { ESCROW_ACK, ESCROW_GIVE, ESCROW_MERGE, ESCROW_READ } from './escrow-lua.js';
import { groupBySlot } from './eventual-sync.js';
import { planGifts } from './rebalance.js';
import type { PeerLink, Replicator } from './sync-loop.js';

/** A lease record as this region sends it. */
export interface RecordPart {
  readonly policy: ResolvedPolicy;
  readonly inc: string;
  readonly share: number;
  readonly demand: number;
  /** Per peer: units given, and the incarnation of that peer they were given to. */
  readonly given: ReadonlyMap<string, { units: number; to: string; at: number }>;
}

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
  /** Marks a record changed (after a gift). */
  readonly touch: (recordKey: string) => void;
  /** Least time between two rebalances of one record, in ms. */
  readonly rebalanceEveryMs: number;
}

/** Sends lease records to the other regions and rebalances them (escrow mode). */
export function createRecordReplicator(o: RecordReplicatorOptions): Replicator<RecordPart> {
  const peers = o.regions.filter((r) => r !== o.region).sort();
  /** When each record was last rebalanced (bounded: cleared when it grows past 100 000). */
  const lastGift = new Map<string, number>();

  async function rebalance(rkey: string, part: RecordPart, peerInfo: Map<string, { share: number; demand: number }>) {
    const now = o.clock.now();
    if ((lastGift.get(rkey) ?? Number.NEGATIVE_INFINITY) + o.rebalanceEveryMs > now) return;
    const gifts = planGifts({
      limit: part.policy.limit,
      share: part.share,
      demand: part.demand,
      peers: peers.map((region) => ({
        region,
        share: peerInfo.get(region)?.share ?? 0,
        demand: peerInfo.get(region)?.demand ?? 0,
        reachable: part.given.get(region)?.to !== undefined && part.given.get(region)?.to !== '',
      })),
    });
    if (gifts.length === 0) return;
    if (lastGift.size > 100_000) lastGift.clear();
    lastGift.set(rkey, now);
    const init = initialShare(part.policy.limit, o.regions, o.region);
    const proof = Math.floor(leaseTtlMs(part.policy) / 2);
    for (const g of gifts) {
      const head = escrowHead(now, o.graceMs, o.region, peers);
      await o.local.script(ESCROW_GIVE, [rkey], [...head, g.to, String(g.units), String(init), String(proof)]);
    }
    o.touch(rkey);
  }

  return {
    async read(keys) {
      const out = new Map<string, RecordPart | undefined>();
      const known = keys.filter((k) => o.policyOf(k) !== undefined);
      for (const k of keys) if (o.policyOf(k) === undefined) out.set(k, undefined);
      const head = escrowHead(o.clock.now(), o.graceMs, o.region, peers);
      await Promise.all(
        groupBySlot(known, o.localCluster).map(async (group) => {
          const r = (await o.local.script(ESCROW_READ, group, head)) as unknown[];
          let at = 0;
          for (const k of group) {
            const inc = String(r[at++]);
            if (inc === '') {
              out.set(k, undefined);
              continue;
            }
            const share = Number(r[at++]);
            const demand = Number(r[at++]);
            at++; // TTL
            const given = new Map<string, { units: number; to: string; at: number }>();
            const peerInfo = new Map<string, { share: number; demand: number }>();
            for (const p of peers) {
              given.set(p, { units: Number(r[at]), to: String(r[at + 1]), at: Number(r[at + 4]) });
              peerInfo.set(p, { share: Number(r[at + 2]), demand: Number(r[at + 3]) });
              at += 5;
            }
            const part: RecordPart = { policy: o.policyOf(k) as ResolvedPolicy, inc, share, demand, given };
            out.set(k, part);
            // Rebalancing is a local write; its gifts go out with the next tick.
            await rebalance(k, part, peerInfo).catch(() => undefined);
          }
        }),
      );
      return out;
    },

    async push(peer: PeerLink, items) {
      await Promise.all(
        groupBySlot([...items.keys()], peer.cluster).map(async (group) => {
          const args = escrowHead(o.clock.now(), o.graceMs, o.region, []);
          args.push(newIncarnation());
          for (const k of group) {
            const part = items.get(k) as RecordPart;
            const gift = part.given.get(peer.region) ?? { units: 0, to: '', at: 0 };
            args.push(String(initialShare(part.policy.limit, o.regions, peer.region)));
            args.push(String(leaseTtlMs(part.policy)), part.inc, String(gift.units), gift.to);
            args.push(String(part.share), String(part.demand), String(gift.at));
          }
          const incs = (await peer.runner.script(ESCROW_MERGE, group, args)) as string[];
          // The peer holds these records now (the merge refreshed them): units it gave us count on.
          const ack = escrowHead(o.clock.now(), o.graceMs, o.region, []);
          await o.local.script(ESCROW_ACK, group, [...ack, peer.region, ...incs]);
        }),
      );
    },
  };
}
