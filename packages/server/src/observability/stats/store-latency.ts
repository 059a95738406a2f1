/** The store's recent latency and errors for the dashboard, read from the Prometheus histogram. */
import type { Registry } from 'prom-client';

/** Store latency and errors over the last few seconds, read from the service's Prometheus metrics. */
export interface StoreLatency {
  /** Store calls in the window. */
  readonly calls: number;
  /** Failed store calls in the window. */
  readonly errors: number;
  /** Estimated median and 99th percentile (ms), as Prometheus' `histogram_quantile` would; null without calls. */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly meanMs: number | null;
  /** How many seconds the figures cover; 0 when they cover everything since the service started. */
  readonly windowS: number;
}

/** Options of {@link createStoreLatencyReader}. */
export interface StoreLatencyOptions {
  registry: Registry;
  /** @default 'sluice_store_latency_seconds' */
  histogram?: string;
  /** @default 'sluice_store_errors_total' */
  errors?: string;
  /** How far back the figures reach. @default 10_000 */
  windowMs?: number;
  /** @default Date.now */
  now?: () => number;
}

interface Sample {
  atMs: number;
  /** Cumulative counts per upper bound (seconds), ascending, `Infinity` last. */
  bounds: number[];
  cumulative: number[];
  sum: number;
  count: number;
  errors: number;
}

/**
 * Reads the store latency histogram and error counter the service already keeps (so the request path
 * does no extra work) and turns the difference between now and a sample taken about `windowMs` ago into
 * recent percentiles. Samples are taken when asked, so nothing runs while no dashboard is open.
 */
export function createStoreLatencyReader(options: StoreLatencyOptions): () => Promise<StoreLatency> {
  const histogramName = options.histogram ?? 'sluice_store_latency_seconds';
  const errorsName = options.errors ?? 'sluice_store_errors_total';
  const windowMs = options.windowMs ?? 10_000;
  const now = options.now ?? Date.now;
  const samples: Sample[] = [];

  async function sample(): Promise<Sample> {
    const atMs = now();
    const byBound = new Map<number, number>();
    let sum = 0;
    let count = 0;
    let errors = 0;
    const histogram = await options.registry.getSingleMetric(histogramName)?.get();
    for (const v of histogram?.values ?? []) {
      const name = (v as { metricName?: string }).metricName ?? '';
      if (name.endsWith('_bucket')) {
        const le = v.labels.le;
        const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
        byBound.set(bound, (byBound.get(bound) ?? 0) + v.value);
      } else if (name.endsWith('_sum')) sum += v.value;
      else if (name.endsWith('_count')) count += v.value;
    }
    const counter = await options.registry.getSingleMetric(errorsName)?.get();
    for (const v of counter?.values ?? []) errors += v.value;
    const bounds = [...byBound.keys()].sort((a, b) => a - b);
    return { atMs, bounds, cumulative: bounds.map((b) => byBound.get(b) ?? 0), sum, count, errors };
  }

  return async () => {
    const current = await sample();
    while (samples.length > 1 && (samples[1] as Sample).atMs <= current.atMs - windowMs) samples.shift();
    const base = samples[0];
    // Keep at most one sample per second: enough resolution for a 10 s window.
    const last = samples[samples.length - 1];
    if (last === undefined || current.atMs - last.atMs >= 1000) samples.push(current);
    const delta = (i: number) => (current.cumulative[i] ?? 0) - (base?.cumulative[i] ?? 0);
    const calls = current.count - (base?.count ?? 0);
    const quantile = (q: number) => {
      if (calls <= 0) return null;
      const rank = q * calls;
      let lower = 0;
      let below = 0;
      for (let i = 0; i < current.bounds.length; i++) {
        const upper = current.bounds[i] as number;
        const atOrBelow = delta(i);
        if (atOrBelow >= rank) {
          // Past the last finite bound, the best statement is "at least the last bound".
          if (!Number.isFinite(upper)) return lower * 1000;
          const inBucket = atOrBelow - below;
          return (lower + (upper - lower) * (inBucket > 0 ? (rank - below) / inBucket : 1)) * 1000;
        }
        lower = upper;
        below = atOrBelow;
      }
      return lower * 1000;
    };
    const windowS = base === undefined ? 0 : Math.max(1, Math.round((current.atMs - base.atMs) / 1000));
    return {
      calls,
      errors: current.errors - (base?.errors ?? 0),
      p50Ms: quantile(0.5),
      p99Ms: quantile(0.99),
      meanMs: calls > 0 ? ((current.sum - (base?.sum ?? 0)) / calls) * 1000 : null,
      windowS,
    };
  };
}
