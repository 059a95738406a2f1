/**
 * What "the global limit was kept" means for each algorithm, checked on the instants of every
 * admission across every region (sorted), and the eventual-mode bound of bound.ts on the same data.
 */
import assert from 'node:assert/strict';

/** Admissions per aligned window of `periodMs`. */
export function perWindow(ts: readonly number[], periodMs: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const t of ts) {
    const w = Math.floor(t / periodMs);
    out.set(w, (out.get(w) ?? 0) + 1);
  }
  return out;
}

/** Most admissions in any interval (t − period, t]: the sliding log's promise. */
export function maxInAnyPeriod(ts: readonly number[], periodMs: number): number {
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < ts.length; hi++) {
    while ((ts[lo] as number) <= (ts[hi] as number) - periodMs) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

/**
 * How far the admissions exceed a token bucket's envelope: the largest
 * (admissions in [a, b]) − burst − (b − a)·limit/period over every pair of admissions. ≤ 0 means
 * within `burst + rate × time` everywhere (the promise of the token bucket, leaky bucket and GCRA).
 */
export function bucketExcess(ts: readonly number[], burst: number, limit: number, periodMs: number): number {
  // (j − i + 1) − (t_j − t_i)·r = (j − t_j·r) − (i − t_i·r) + 1: keep the smallest i − t_i·r seen.
  const r = limit / periodMs;
  let lowest = Number.POSITIVE_INFINITY;
  let worst = Number.NEGATIVE_INFINITY;
  ts.forEach((t, j) => {
    lowest = Math.min(lowest, j - t * r);
    worst = Math.max(worst, j - t * r - lowest + 1 - burst);
  });
  return worst;
}

/** The sliding window's estimate over all admissions, at each admission, times the period (integers). */
export function maxSlidingEstimate(ts: readonly number[], periodMs: number): number {
  const counts = perWindow(ts, periodMs);
  let max = 0;
  for (const t of ts) {
    const w = Math.floor(t / periodMs);
    const elapsed = t - w * periodMs;
    // Admissions of the current window up to t only.
    let curr = 0;
    for (const u of ts) if (u <= t && Math.floor(u / periodMs) === w) curr++;
    const prev = counts.get(w - 1) ?? 0;
    max = Math.max(max, (prev * (periodMs - elapsed) + curr * periodMs) / periodMs);
  }
  return max;
}

/** One admission: when and where. */
export interface Admission {
  readonly t: number;
  readonly region: string;
}

/** Admissions of regions other than `region` in (t − lagMs, t]. */
function othersWithin(all: readonly Admission[], region: string, t: number, lagMs: number): number {
  let n = 0;
  for (const a of all) if (a.region !== region && a.t > t - lagMs && a.t <= t) n++;
  return n;
}

/**
 * Fixed windows, eventual mode: every window's total against L + min((N − 1)·L, what the other
 * regions admitted in the Δ before the window's last admission). Returns the windows that broke it.
 */
export function fixedWindowBoundBreaches(
  all: readonly Admission[],
  limit: number,
  periodMs: number,
  regions: number,
  lagMs: number,
): { window: number; total: number; bound: number }[] {
  const byWindow = new Map<number, Admission[]>();
  for (const a of all) {
    const w = Math.floor(a.t / periodMs);
    const list = byWindow.get(w);
    if (list === undefined) byWindow.set(w, [a]);
    else list.push(a);
  }
  const breaches: { window: number; total: number; bound: number }[] = [];
  for (const [window, list] of byWindow) {
    const last = list[list.length - 1] as Admission;
    const over = Math.min((regions - 1) * limit, othersWithin(list, last.region, last.t, lagMs));
    if (list.length > limit + over) breaches.push({ window, total: list.length, bound: limit + over });
  }
  return breaches;
}

/**
 * Sliding windows, eventual mode: at every admission by region i at t, the estimate over all regions
 * against L + min((N − 1)·L, what the other regions admitted in (t − Δ, t]) (their counts weigh at
 * most 1 in the estimate). Returns the admissions that broke it.
 */
export function slidingWindowBoundBreaches(
  all: readonly Admission[],
  limit: number,
  periodMs: number,
  regions: number,
  lagMs: number,
): { t: number; estimate: number; bound: number }[] {
  const breaches: { t: number; estimate: number; bound: number }[] = [];
  all.forEach((a, k) => {
    const w = Math.floor(a.t / periodMs);
    const elapsed = a.t - w * periodMs;
    let prev = 0;
    let curr = 0;
    for (let m = 0; m <= k || (m < all.length && (all[m] as Admission).t === a.t); m++) {
      const u = (all[m] as Admission).t;
      if (Math.floor(u / periodMs) === w) curr++;
      else if (Math.floor(u / periodMs) === w - 1) prev++;
    }
    const estimate = (prev * (periodMs - elapsed) + curr * periodMs) / periodMs;
    const bound = limit + Math.min((regions - 1) * limit, othersWithin(all, a.region, a.t, lagMs));
    if (estimate > bound) breaches.push({ t: a.t, estimate, bound });
  });
  return breaches;
}

/**
 * Asserts the global limit of `algorithm` on the sorted admission instants `ts`, by that algorithm's
 * own definition of it (burst = limit for the buckets).
 */
export function assertLimitKept(
  ts: readonly number[],
  algorithm: string,
  limit: number,
  periodMs: number,
  label = '',
): void {
  if (algorithm === 'fixed-window') {
    for (const [w, n] of perWindow(ts, periodMs))
      assert.ok(n <= limit, `${label} window ${w} admitted ${n} > ${limit}`);
  } else if (algorithm === 'sliding-log') {
    const max = maxInAnyPeriod(ts, periodMs);
    assert.ok(max <= limit, `${label} ${max} admissions in one period`);
  } else if (algorithm === 'sliding-window') {
    const max = maxSlidingEstimate(ts, periodMs);
    assert.ok(max <= limit, `${label} estimate reached ${max}`);
  } else {
    const excess = bucketExcess(ts, limit, limit, periodMs);
    assert.ok(excess <= 0, `${label} ${excess} over burst + rate × time`);
  }
}
