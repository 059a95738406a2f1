/**
 * Escrow's demand estimate (the units asked here per period, which moves shares between regions),
 * counted in the process rather than in Redis: a decision adds its cost to a sum decayed with time
 * constant TAU, and the sync adds that sum to the lease record's own when it next reads the record
 * (escrow-lua.ts, READ). Decayed sums add up — the sum of each process's decayed sum is the decayed
 * sum of all their requests — so the region's estimate is the same as if every decision had written
 * it, only as of the last read; and a decision spends no Redis time on it.
 *
 * Bounded: past `maxKeys` records, the one counted first is dropped (its demand reads low until the
 * next decision on it; an estimate, never a limit).
 */
interface Sum {
  sum: number;
  at: number;
  tau: number;
}

export class DemandLedger {
  private readonly sums = new Map<string, Sum>();

  constructor(private readonly maxKeys: number) {}

  /** Counts `cost` units asked of `recordKey`, decided at `atMs`. */
  add(recordKey: string, cost: number, atMs: number, tauMs: number): void {
    const s = this.sums.get(recordKey);
    if (s === undefined) {
      this.sums.set(recordKey, { sum: cost, at: atMs, tau: tauMs });
      if (this.sums.size > this.maxKeys) this.sums.delete(this.sums.keys().next().value as string);
      return;
    }
    // Decisions on one record come back in (about) time order; one earlier than the sum's instant
    // counts as of that instant.
    if (atMs > s.at) {
      s.sum *= Math.exp((s.at - atMs) / s.tau);
      s.at = atMs;
    }
    s.sum += cost;
    s.tau = tauMs;
  }

  /** The READ script's three arguments for `recordKey` (sum, its instant, TAU; zeros for none), forgotten here. */
  take(recordKey: string): [string, string, string] {
    const s = this.sums.get(recordKey);
    if (s === undefined) return ['0', '0', '0'];
    this.sums.delete(recordKey);
    return [String(s.sum), String(s.at), String(s.tau)];
  }
}
