/** What an escrow sync sends of one lease record: its share, demand, and the units given and received. */
import type { ResolvedPolicy } from '../../core/policy.js';

/** A lease record as this region sends it. */
export interface RecordPart {
  readonly policy: ResolvedPolicy;
  readonly inc: string;
  readonly share: number;
  /** Units asked per period here (estimate). */
  readonly demand: number;
  /** Units to ask each peer for (0: none). */
  readonly want: number;
  /** Per peer: units given (running total), the incarnation of that peer, the last transfer's instant. */
  readonly given: ReadonlyMap<string, { units: number; to: string; at: number }>;
  /** Per peer: units received from it (the largest running total it reported). */
  readonly received: ReadonlyMap<string, number>;
}
