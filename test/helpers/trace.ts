import { NUMERIC_ALGORITHMS, SLOT_WIDTH } from '../../packages/sluice/src/algorithms/index.js';
import { SlidingLogState, slidingLog } from '../../packages/sluice/src/algorithms/sliding-log.js';
import type { Decision } from '../../packages/sluice/src/core/decision.js';
import type { PolicyOptions } from '../../packages/sluice/src/core/policy.js';
import { resolvePolicy } from '../../packages/sluice/src/core/policy.js';

/** Runs `(atMs, cost)` checks through one algorithm's pure step, as one key, committing each. */
export function runTrace(options: PolicyOptions, trace: readonly (readonly [number, number?])[]): Decision[] {
  const p = resolvePolicy(options);
  const slots = new Float64Array(SLOT_WIDTH);
  const log = new SlidingLogState();
  return trace.map(([at, cost = 1]) =>
    p.algorithm === 'sliding-log'
      ? slidingLog.check(log, 0, at, p, cost, true)
      : NUMERIC_ALGORITHMS[p.algorithm].check(slots, 0, at, p, cost, true),
  );
}

/** How many of the decisions were allowed. */
export const admitted = (ds: readonly Decision[]) => ds.filter((d) => d.allowed).length;
