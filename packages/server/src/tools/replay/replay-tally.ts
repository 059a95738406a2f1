/** Admitted and rejected counts of one rule or key under the candidate and the baseline, and the flips between them. */

/** Admitted and rejected counts of one rule or key, under the candidate and the baseline. */
export interface ReplayTally {
  admitted: number;
  rejected: number;
  baselineAdmitted: number;
  baselineRejected: number;
  /** Admitted by the baseline, rejected by the candidate. */
  newlyRejected: number;
  /** Rejected by the baseline, admitted by the candidate. */
  newlyAdmitted: number;
}

/** A tally of nothing yet. */
export const emptyTally = (): ReplayTally => ({
  admitted: 0,
  rejected: 0,
  baselineAdmitted: 0,
  baselineRejected: 0,
  newlyRejected: 0,
  newlyAdmitted: 0,
});

/** Counts one request decided `rejected` by the candidate and `baselineRejected` by the baseline. */
export function count(tally: ReplayTally, rejected: boolean, baselineRejected: boolean): void {
  if (rejected) tally.rejected++;
  else tally.admitted++;
  if (baselineRejected) tally.baselineRejected++;
  else tally.baselineAdmitted++;
  if (rejected && !baselineRejected) tally.newlyRejected++;
  if (!rejected && baselineRejected) tally.newlyAdmitted++;
}

/** The tally of `name` in `map`, made on first use. */
export function tallyOf(map: Map<string, ReplayTally>, name: string): ReplayTally {
  let tally = map.get(name);
  if (tally === undefined) {
    tally = emptyTally();
    map.set(name, tally);
  }
  return tally;
}
