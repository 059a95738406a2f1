/**
 * How far over its limit a multi-region store can go, per window — the number the docs promise and
 * the three-region test holds the store to.
 *
 * Eventual mode. Let L be the limit, N the number of regions, and Δ the propagation lag: the longest
 * time between a region admitting a request and every other region's Redis counting it. A count made
 * at time a is read by the next sync tick (≤ a + S, S = syncIntervalMs, plus one push for a tick
 * that started late) and written to the peer by the push (≤ one push duration d), so
 * Δ ≤ S + 2·d. Take the region i whose admission was the last of a window: when it admitted, its
 * view held its own count exactly and every other region's count as of Δ earlier, and the sum was at
 * most L. So the window's total exceeds L by at most what the *other* regions admitted in the last
 * Δ, and never by more than (N − 1)·L (each region alone stops at L):
 *
 *     admitted per window ≤ L + min((N − 1)·L, R·Δ)
 *
 * with R the admitted rate of the regions other than one (bounded by the total rate). The sliding
 * window's estimate weighs counts by at most 1, so the same bound holds for it. While a region is
 * cut off, Δ is unbounded and the bound is N·L.
 *
 * Escrow mode: shares sum to at most L, so the over-admission is 0, always.
 */

/** The bound for one policy, with what it was computed from. */
export interface OverAdmissionBound {
  readonly mode: 'eventual' | 'escrow';
  readonly limit: number;
  readonly regions: number;
  /** Δ used, in ms (eventual mode). */
  readonly lagMs: number;
  /** The rate (units/s) assumed for the other regions; null = unknown, so the worst case. */
  readonly ratePerSecond: number | null;
  /** Units a window can admit at most, across every region. */
  readonly maxPerWindow: number;
  /** `maxPerWindow − limit`. */
  readonly overAdmission: number;
  /** True when a peer is cut off now: the bound is then N·L. */
  readonly partitioned: boolean;
  /** The formula, for logs and the dashboard. */
  readonly formula: string;
}

/** The eventual-mode bound: L + min((N − 1)·L, R·Δ). */
export function eventualBound(
  limit: number,
  regions: number,
  lagMs: number,
  ratePerSecond: number | null,
  partitioned: boolean,
): OverAdmissionBound {
  const worst = (regions - 1) * limit;
  const over =
    partitioned || ratePerSecond === null ? worst : Math.min(worst, Math.ceil((ratePerSecond * lagMs) / 1000));
  return {
    mode: 'eventual',
    limit,
    regions,
    lagMs,
    ratePerSecond,
    maxPerWindow: limit + over,
    overAdmission: over,
    partitioned,
    formula: 'L + min((N − 1)·L, R·Δ), Δ = the replication lag (measured)',
  };
}

/** The escrow-mode bound: the limit itself. */
export function escrowBound(limit: number, regions: number): OverAdmissionBound {
  return {
    mode: 'escrow',
    limit,
    regions,
    lagMs: 0,
    ratePerSecond: null,
    maxPerWindow: limit,
    overAdmission: 0,
    partitioned: false,
    formula: 'L (shares sum to at most L)',
  };
}

/** What the store's bound is computed from: its mode and regions, its sync's timing, the peers' status now. */
export interface BoundInputs {
  readonly mode: 'eventual' | 'escrow';
  readonly regions: number;
  readonly syncIntervalMs: number;
  readonly peerTimeoutMs: number;
  /** Per peer: the longest lag measured, and whether it is cut off now. */
  readonly peers: readonly { readonly maxLagMs: number; readonly down: boolean }[];
}

/** The store's bound for a limit (the store's `bound()`): Δ as measured, or the longest one allowed. */
export function storeBound(limit: number, inputs: BoundInputs, ratePerSecond: number | null): OverAdmissionBound {
  if (inputs.mode === 'escrow') return escrowBound(limit, inputs.regions);
  // Δ as measured (change here → held there); before any push landed, the longest one allowed.
  const measured = inputs.peers.reduce((m, s) => Math.max(m, s.maxLagMs), 0);
  const lag = measured > 0 ? measured : 2 * inputs.syncIntervalMs + 2 * inputs.peerTimeoutMs;
  const partitioned = inputs.peers.some((s) => s.down);
  return eventualBound(limit, inputs.regions, lag, ratePerSecond, partitioned);
}
