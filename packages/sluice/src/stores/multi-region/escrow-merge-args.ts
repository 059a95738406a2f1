/**
 * The arguments of escrow mode's sync scripts (escrow-lua.ts): what READ answers of a record, and the
 * MERGE calls of a push — the records sent to a peer, and what the peer answered, merged back here.
 */
import type { ResolvedPolicy } from '../../core/policy.js';
import { escrowHead, newIncarnation, pushItemFields } from './escrow-args.js';
import { demandTauMs, initialShare } from './escrow-share.js';
import { ANSWER_FIELDS } from './merge-answer.js';
import { demandPerPeriod, unitsToAsk } from './rebalance.js';
import type { RecordPart } from './record-part.js';

/** What a sync knows of its regions. */
export interface SyncRegions {
  readonly region: string;
  readonly regions: readonly string[];
  readonly graceMs: number;
  readonly syncIntervalMs: number;
  readonly maxClockSkewMs: number;
}

/**
 * The record READ answered at `r[at]` (its fields in the order escrow-lua.ts returns them), with its
 * demand and how many units to ask for; undefined when the record is gone. Returns where the next starts.
 */
export function decodeRecord(
  r: readonly unknown[],
  at: number,
  policy: ResolvedPolicy,
  peers: readonly string[],
  nowMs: number,
  syncIntervalMs: number,
): [RecordPart | undefined, number] {
  const inc = String(r[at++]);
  if (inc === '') return [undefined, at];
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
  const tau = demandTauMs(policy, syncIntervalMs);
  const demand = demandPerPeriod(dr, dt, nowMs, tau, policy.periodMs);
  const want = unitsToAsk({ limit: policy.limit, share, demand });
  return [{ policy, inc, share, demand, want, given, received }, at];
}

/** The regions other than `region`, sorted (a script's PEERS). */
export function regionsBut(regions: readonly string[], region: string): string[] {
  return regions.filter((r) => r !== region).sort();
}

/**
 * MERGE's arguments in `peer`'s Redis for the records `parts`: what this region gave the peer, its
 * share and demand, and the units it asks for, stamped `asked`.
 */
export function pushArgs(s: SyncRegions, peer: string, parts: readonly RecordPart[], nowMs: number, asked: number) {
  // PEERS of the script are the regions other than the record's owner (here: the peer).
  const args = escrowHead(nowMs, s.graceMs, s.region, regionsBut(s.regions, peer));
  args.push(newIncarnation(), String(s.maxClockSkewMs));
  for (const part of parts) {
    const p = part.policy;
    const gift = part.given.get(peer) ?? { units: 0, to: '', at: 0 };
    pushItemFields(args, p, initialShare(p.limit, s.regions, peer), s.syncIntervalMs, 0, 0);
    args.push(part.inc, String(gift.units), gift.to, String(gift.at), String(part.share));
    args.push(String(part.demand), String(part.want), String(asked), String(nowMs));
  }
  return args;
}

/**
 * MERGE's arguments in this region's Redis for what `peer` answered (checked: merge-answer.ts), so the
 * units it gave are credited here, asking nothing.
 */
export function creditArgs(
  s: SyncRegions,
  peer: string,
  parts: readonly RecordPart[],
  answer: readonly unknown[],
  nowMs: number,
) {
  const args = escrowHead(nowMs, s.graceMs, peer, regionsBut(s.regions, s.region));
  args.push(newIncarnation(), String(s.maxClockSkewMs));
  parts.forEach((part, i) => {
    const p = part.policy;
    const a = i * ANSWER_FIELDS;
    pushItemFields(args, p, initialShare(p.limit, s.regions, s.region), s.syncIntervalMs, 0, 0);
    args.push(String(answer[a]), String(answer[a + 1]), String(answer[a + 2]), String(answer[a + 3]));
    args.push(String(answer[a + 4]), String(answer[a + 5]), '0', '0', String(nowMs));
  });
  return args;
}
