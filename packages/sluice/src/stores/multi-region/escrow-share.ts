/**
 * Escrow mode's numbers of a policy: each region's initial share, the policy of a share, and how long
 * records, proofs and the demand estimate last. The Lua (escrow-lua.ts) computes the same.
 */
import { isBucketAlgorithm, type ResolvedPolicy } from '../../core/policy.js';

/** This region's initial share of `limit`: an even split, the remainder to the first regions by name. */
export function initialShare(limit: number, regions: readonly string[], region: string): number {
  const sorted = [...regions].sort();
  const n = sorted.length;
  const index = sorted.indexOf(region);
  return Math.floor(limit / n) + (index < limit % n ? 1 : 0);
}

/**
 * How long a lease record lives without use: four horizons (the longest an admission matters — two
 * windows, or the time a full bucket takes to drain), and at least 10 minutes. Units received from a
 * peer count only for half of it after the peer was last heard of (see escrow-lua.ts).
 */
export function leaseTtlMs(p: ResolvedPolicy): number {
  const drain = isBucketAlgorithm(p.algorithm) && p.scale > 0 ? Math.ceil(p.capacityTicks / p.scale) : 0;
  return Math.max(600_000, 4 * Math.max(drain, 2 * p.periodMs));
}

/**
 * How long units received from a peer count after the peer was last known to hold its record (PROOF
 * in escrow-lua.ts): half the record's TTL, so a peer whose record expired while cut off is no longer
 * counted before anything it gave could count twice.
 */
export function proofMs(p: ResolvedPolicy): number {
  return Math.floor(leaseTtlMs(p) / 2);
}

/**
 * The time constant of the demand estimate, in ms: a few syncs (demand must move shares about as
 * fast as the sync can), at most a quarter of the period (a load that moved away stops counting
 * within the window).
 */
export function demandTauMs(p: ResolvedPolicy, syncIntervalMs: number): number {
  return Math.max(20, Math.min(Math.floor(p.periodMs / 4), 2 * syncIntervalMs));
}

/** The policy of a share (the Lua `scaled`): limit scaled, burst scaled down, never a faster rate. */
export function sharePolicy(p: ResolvedPolicy, share: number): ResolvedPolicy {
  if (share === p.limit) return p;
  let capacity = isBucketAlgorithm(p.algorithm) ? Math.floor((p.burst * share) / p.limit) : share;
  if (share === 0) capacity = 0;
  let scale = 1;
  let intervalTicks = p.periodMs;
  if (share > 0) {
    const g = gcd(share, p.periodMs);
    scale = share / g;
    if (scale <= 1500) intervalTicks = (p.periodMs * scale) / share;
    else {
      scale = 1500;
      intervalTicks = Math.max(1, Math.ceil((p.periodMs * 1500) / share));
    }
  }
  return { ...p, limit: share, capacity, scale, intervalTicks, capacityTicks: capacity * intervalTicks };
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
