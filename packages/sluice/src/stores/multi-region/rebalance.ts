/**
 * Where escrow units go: a region that needs more than its share *asks* for them, on its sync push
 * (never on a decision's path), and each region it asks gives, atomically in its own Redis, what it
 * can spare (escrow-lua.ts, MERGE). Asking is the borrower's plan, sparing the lender's; neither
 * needs the other's view to be fresh: a lender only ever gives out of its own share, so a plan made
 * from stale numbers moves units late, never too many.
 *
 * Demand is an estimate of the units asked per period (allowed or not): a sum decayed with a time
 * constant of a few syncs, so a load that moves away stops holding its share within the window.
 */
import { DEMAND_HEADROOM } from './escrow-lua.js';

/** What a region knows of one record, for asking. */
export interface AskView {
  readonly limit: number;
  /** This region's share. */
  readonly share: number;
  /** Units asked per period here (estimate). */
  readonly demand: number;
}

/** The units this region asks each peer for: what its demand (with headroom) exceeds its share by. */
export function unitsToAsk(view: AskView): number {
  const { limit, share, demand } = view;
  if (share >= limit || demand <= 0) return 0;
  const need = Math.ceil(demand * DEMAND_HEADROOM) - share;
  return need > 0 ? Math.min(need, limit - share) : 0;
}

/**
 * The decayed demand sum `dr` (as of `dtMs`) as units per period at `nowMs`: a steady rate of q
 * units per ms makes the sum q·τ, so the rate is sum/τ.
 */
export function demandPerPeriod(dr: number, dtMs: number, nowMs: number, tauMs: number, periodMs: number): number {
  if (!(dr > 0)) return 0;
  return (dr * Math.exp(-Math.max(0, nowMs - dtMs) / tauMs) * periodMs) / tauMs;
}
