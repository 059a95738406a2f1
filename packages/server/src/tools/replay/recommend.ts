/**
 * Suggested limits from observed traffic: each key's busiest window, its percentiles across keys (p50, p90, p99,
 * max) as candidate limits, and the share of keys and requests each candidate would turn away.
 */

/** One observed request: when (ms), whose key, and its cost. */
export interface ObservedRequest {
  readonly t: number;
  readonly key: string;
  readonly cost: number;
}

/** One candidate limit and what it would cost the traffic it was drawn from. */
export interface LimitSuggestion {
  /** `'p50'`, `'p90'`, `'p99'` or `'max'`: the percentile of per-key peaks it is. */
  readonly percentile: string;
  /** The limit per window (units of cost). */
  readonly limit: number;
  /** Share (0-1) of keys that would be refused at least once. */
  readonly keysRejected: number;
  /** Share (0-1) of the units that would be refused. */
  readonly requestsRejected: number;
}

/** The suggestions for one rule. */
export interface Recommendation {
  readonly windowMs: number;
  readonly keys: number;
  readonly units: number;
  readonly suggestions: readonly LimitSuggestion[];
}

const PERCENTILES: readonly [string, number][] = [
  ['p50', 0.5],
  ['p90', 0.9],
  ['p99', 0.99],
  ['max', 1],
];

/** The nearest-rank percentile `q` (0-1] of ascending `sorted`. */
function nearestRank(sorted: readonly number[], q: number): number {
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1] ?? 0;
}

/**
 * Recommends a limit per `windowMs` from `requests`. Counts are per fixed window aligned on multiples of
 * `windowMs` (what a fixed-window limit of that period would count): a sliding limit sees peaks at least
 * this high, so the shares here are lower bounds for it.
 */
export function recommendLimits(requests: Iterable<ObservedRequest>, windowMs: number): Recommendation {
  // key -> window index -> units; one map per key keeps memory to the windows a key was seen in.
  const perKey = new Map<string, Map<number, number>>();
  let units = 0;
  for (const r of requests) {
    let windows = perKey.get(r.key);
    if (windows === undefined) {
      windows = new Map();
      perKey.set(r.key, windows);
    }
    const w = Math.floor(r.t / windowMs);
    windows.set(w, (windows.get(w) ?? 0) + r.cost);
    units += r.cost;
  }
  const peaks: number[] = [];
  // A loop, not Math.max(...): a key seen in a million windows would overflow the call's arguments.
  for (const windows of perKey.values()) {
    let peak = 0;
    for (const count of windows.values()) peak = Math.max(peak, count);
    peaks.push(peak);
  }
  peaks.sort((a, b) => a - b);
  const suggestions = PERCENTILES.map(([percentile, q]): LimitSuggestion => {
    const limit = nearestRank(peaks, q);
    let keysOver = 0;
    let unitsOver = 0;
    for (const windows of perKey.values()) {
      let over = 0;
      for (const count of windows.values()) over += Math.max(0, count - limit);
      if (over > 0) keysOver++;
      unitsOver += over;
    }
    return {
      percentile,
      limit,
      keysRejected: perKey.size === 0 ? 0 : keysOver / perKey.size,
      requestsRejected: units === 0 ? 0 : unitsOver / units,
    };
  });
  return { windowMs, keys: perKey.size, units, suggestions };
}
