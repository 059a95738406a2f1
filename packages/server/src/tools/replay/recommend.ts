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
 * One key's units per window, in the order they come: a capture is in time order, so a window is closed
 * when the next begins and kept as a number in a list; a record from an earlier window (a capture of
 * several processes) moves the key to a map of its windows.
 */
export class WindowCounts {
  private window = Number.NaN;
  private count = 0;
  private readonly closed: number[] = [];
  private byWindow: Map<number, number> | undefined;

  add(window: number, cost: number): void {
    if (this.byWindow !== undefined) this.byWindow.set(window, (this.byWindow.get(window) ?? 0) + cost);
    else if (window === this.window) this.count += cost;
    else if (!(window < this.window)) {
      if (this.count > 0) this.closed.push(this.count);
      this.window = window;
      this.count = cost;
    } else {
      // Out of order: the closed windows' indices were not kept, so their counts keep keys of their own.
      this.byWindow = new Map(this.closed.map((c, i) => [-1 - i, c]));
      this.byWindow.set(this.window, this.count);
      this.byWindow.set(window, (this.byWindow.get(window) ?? 0) + cost);
    }
  }

  /** The units of every window the key was seen in. */
  counts(): Iterable<number> {
    if (this.byWindow !== undefined) return this.byWindow.values();
    return this.count > 0 ? [...this.closed, this.count] : this.closed;
  }
}

/** Suggestions from each key's window counts (see {@link recommendLimits}). */
export function recommendFrom(perKey: readonly WindowCounts[], windowMs: number): Recommendation {
  const counts = perKey.map((k) => [...k.counts()]);
  let units = 0;
  const peaks: number[] = [];
  // A loop, not Math.max(...): a key seen in a million windows would overflow the call's arguments.
  for (const windows of counts) {
    let peak = 0;
    for (const count of windows) {
      peak = Math.max(peak, count);
      units += count;
    }
    peaks.push(peak);
  }
  peaks.sort((a, b) => a - b);
  const suggestions = PERCENTILES.map(([percentile, q]): LimitSuggestion => {
    const limit = nearestRank(peaks, q);
    let keysOver = 0;
    let unitsOver = 0;
    for (const windows of counts) {
      let over = 0;
      for (const count of windows) over += Math.max(0, count - limit);
      if (over > 0) keysOver++;
      unitsOver += over;
    }
    return {
      percentile,
      limit,
      keysRejected: counts.length === 0 ? 0 : keysOver / counts.length,
      requestsRejected: units === 0 ? 0 : unitsOver / units,
    };
  });
  return { windowMs, keys: counts.length, units, suggestions };
}

/**
 * Recommends a limit per `windowMs` from `requests`. Counts are per fixed window aligned on multiples of
 * `windowMs` (what a fixed-window limit of that period would count): a sliding limit sees peaks at least
 * this high, so the shares here are lower bounds for it.
 */
export function recommendLimits(requests: Iterable<ObservedRequest>, windowMs: number): Recommendation {
  const perKey = new Map<string, WindowCounts>();
  for (const r of requests) {
    let windows = perKey.get(r.key);
    if (windows === undefined) {
      windows = new WindowCounts();
      perKey.set(r.key, windows);
    }
    windows.add(Math.floor(r.t / windowMs), r.cost);
  }
  return recommendFrom([...perKey.values()], windowMs);
}

/** Suggestions per rule: the window counts of each key a rule counted, fed as a replay decides. */
export class RuleRecommender {
  private readonly rules = new Map<string, Map<string, WindowCounts>>();

  constructor(readonly windowMs: number) {}

  /** The counts of `key` under `rule` (made on first use); callers keep it and `add` to it. */
  counts(rule: string, key: string): WindowCounts {
    let keys = this.rules.get(rule);
    if (keys === undefined) {
      keys = new Map();
      this.rules.set(rule, keys);
    }
    let counts = keys.get(key);
    if (counts === undefined) {
      counts = new WindowCounts();
      keys.set(key, counts);
    }
    return counts;
  }

  /** The suggestions of every rule, by name. */
  result(): Map<string, Recommendation> {
    const out = new Map<string, Recommendation>();
    for (const [rule, keys] of this.rules) out.set(rule, recommendFrom([...keys.values()], this.windowMs));
    return out;
  }
}
