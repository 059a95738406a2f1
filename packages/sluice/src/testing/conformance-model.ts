/** The store conformance suite's reference model and helpers: the pure algorithm steps over one key, fresh keys, policies. */
import { NUMERIC_ALGORITHMS, SLOT_WIDTH } from '../algorithms/index.js';
import { SlidingLogState, slidingLog } from '../algorithms/sliding-log.js';
import type { Decision } from '../core/decision.js';
import { type AlgorithmName, type ResolvedPolicy, resolvePolicy } from '../core/policy.js';

/** A minute boundary, so windows of 1 s and 1 min both start here. */
export const T0 = 1_700_000_040_000;

let keySeq = 0;
/** A key no other case uses, so cases never see each other's counters on a shared store. */
export const freshKey = (label: string) => `${label}:${process.pid}:${++keySeq}:{weird}key`;

export function policy(
  algorithm: AlgorithmName,
  limit = 3,
  period = 1000,
  extra: { burst?: number; blockDuration?: number } = {},
) {
  return resolvePolicy({ algorithm, limit, period, ...extra });
}

/** The reference model: the pure algorithm steps over one key's state. */
export class Reference {
  private readonly slots = new Float64Array(SLOT_WIDTH);
  private log = new SlidingLogState();
  constructor(private readonly p: ResolvedPolicy) {}
  check(now: number, cost: number, commit: boolean): Decision {
    if (this.p.algorithm === 'sliding-log') return slidingLog.check(this.log, 0, now, this.p, cost, commit);
    return NUMERIC_ALGORITHMS[this.p.algorithm].check(this.slots, 0, now, this.p, cost, commit);
  }
  reset() {
    this.slots.fill(0);
    this.log = new SlidingLogState();
  }
}

/** Decisions compared as JSON would carry them (Infinity as a string, since JSON has none). */
export function plain(d: Decision) {
  return { ...d, retryAfterMs: Number.isFinite(d.retryAfterMs) ? d.retryAfterMs : 'Infinity' };
}
