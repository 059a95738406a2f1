/**
 * The arguments escrow mode's scripts take (escrow-lua.ts): the head every script starts with, a
 * policy's numbers in `make_item()`'s order, the check script's policy text, and incarnation ids.
 */
import type { ResolvedPolicy } from '../../core/policy.js';
import { hexArg } from '../redis/hex.js';
import { ALGORITHM_CODES } from '../redis/lua.js';
import { demandTauMs, initialShare, leaseTtlMs, proofMs } from './escrow-share.js';

/** The 13 numbers of a policy, as escrow-lua.ts's `make_item()` takes them, in its order. */
type PolicyNumbers = [
  algorithm: number,
  limit: number,
  period: number,
  burst: number,
  capacity: number,
  scale: number,
  intervalTicks: number,
  capacityTicks: number,
  blockMs: number,
  init: number,
  ttl: number,
  proof: number,
  tau: number,
];

/** A policy's numbers for a region whose initial share is `init`. */
export function policyNumbers(p: ResolvedPolicy, init: number, syncIntervalMs: number, blockMs: number): PolicyNumbers {
  const ttl = leaseTtlMs(p);
  return [
    ALGORITHM_CODES[p.algorithm],
    p.limit,
    p.periodMs,
    p.burst,
    p.capacity,
    p.scale,
    p.intervalTicks,
    p.capacityTicks,
    blockMs,
    init,
    ttl,
    proofMs(p),
    demandTauMs(p, syncIntervalMs),
  ];
}

/** Appends the ITEM_FIELDS of one item (escrow-lua.ts, \`item()\`) to `args`. */
export function pushItemFields(
  args: string[],
  p: ResolvedPolicy,
  init: number,
  syncIntervalMs: number,
  blockMs: number,
  cost: number,
): void {
  for (const n of policyNumbers(p, init, syncIntervalMs, blockMs)) args.push(String(n));
  args.push(String(cost));
}

/** Arguments every escrow script but the check starts with. */
export function escrowHead(nowMs: number, graceMs: number, region: string, peers: readonly string[]): string[] {
  return [String(nowMs), String(graceMs), region, String(peers.length), ...peers];
}

/**
 * Each policy as the check script's text (escrow-lua.ts, POLICY_HEAD), built once per policy object:
 * the five numbers the fast path reads first, then the rest of make_item's, in hexadecimal.
 */
export function createPolicyTexts(
  regions: readonly string[],
  region: string,
  graceMs: number,
  syncIntervalMs: number,
): (p: ResolvedPolicy) => string {
  const texts = new WeakMap<ResolvedPolicy, string>();
  return (p) => {
    let t = texts.get(p);
    if (t === undefined) {
      const init = initialShare(p.limit, regions, region);
      const [alg, limit, period, burst, capacity, scale, T, capT, block, , ttl, proof, tau] = policyNumbers(
        p,
        init,
        syncIntervalMs,
        p.blockMs,
      );
      t = [period, capacity, block, ttl, graceMs, alg, limit, burst, scale, T, capT, init, proof, tau]
        .map(hexArg)
        .join(' ');
      texts.set(p, t);
    }
    return t;
  };
}

/** This process's part of incarnation ids: random, so two processes never make the same one. */
const incarnationBase = Math.floor(Math.random() * 2 ** 48).toString(36);
let incarnations = 0;
/**
 * An incarnation id for a record this call may create: never the same twice (a record created anew
 * must not be taken by a peer for the one before), and cheap, since every check call carries one.
 */
export const newIncarnation = () => `${incarnationBase}-${++incarnations}`;
