/**
 * Counters and histograms counted in plain numbers on the request path and handed to prom-client only when scraped.
 */
import { Counter, type Metric, type Registry } from 'prom-client';

/**
 * Metrics counted on the request path in plain numbers and handed to prom-client only when scraped.
 *
 * prom-client hashes the label object into a string on every `inc` and `observe` — even through a child
 * from `labels()` — and validates the labels again: three of those per decision were a few percent of
 * the service's CPU and a string each. Here a series is looked up once (`tally(labels)`), counted with
 * `tally.n++`, and what was counted since the last scrape is added to the prom-client counter then.
 */

/** One series of a {@link TalliedCounter}: add to `n`. */
export interface Tally {
  n: number;
}

/** A counter whose series are {@link Tally}s. */
export interface TalliedCounter<L extends string> {
  readonly counter: Counter<L>;
  /** A new series with these labels (call once per series and keep it: every call adds one). */
  tally(labels: Partial<Record<L, string>>): Tally;
}

/** Options of {@link createTalliedCounter}: prom-client's, without `collect` (it is this counter's). */
export interface TalliedCounterOptions<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: Registry[];
}

/** Creates a counter counted in {@link Tally}s. */
export function createTalliedCounter<L extends string>(options: TalliedCounterOptions<L>): TalliedCounter<L> {
  const series: { labels: Partial<Record<L, string>>; tally: Tally; published: number }[] = [];
  const counter = new Counter<L>({
    ...options,
    collect() {
      for (const s of series) {
        const delta = s.tally.n - s.published;
        if (delta > 0) {
          this.inc(s.labels, delta);
          s.published = s.tally.n;
        }
      }
    },
  });
  return {
    counter,
    tally(labels) {
      const tally = { n: 0 };
      series.push({ labels, tally, published: 0 });
      return tally;
    },
  };
}

/** Options of {@link createTalliedHistogram}. */
export interface TalliedHistogramOptions {
  name: string;
  help: string;
  /** Upper bounds of the buckets, ascending (`+Inf` is added). */
  buckets: readonly number[];
  /** Constant labels of its one series. */
  labels: Readonly<Record<string, string>>;
  registers: Registry[];
}

/** A histogram of one series, observed in plain arrays. */
export interface TalliedHistogram {
  observe(value: number): void;
}

/**
 * Creates a histogram with one series, registered as a prom-client metric (the exposition, and what
 * `registry.getSingleMetric(name).get()` returns, have prom-client's own histogram shape).
 */
export function createTalliedHistogram(options: TalliedHistogramOptions): TalliedHistogram {
  const bounds = options.buckets;
  const counts = new Float64Array(bounds.length + 1);
  let sum = 0;
  let count = 0;
  const { name, help, labels } = options;
  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    async get() {
      const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
      let cumulative = 0;
      for (let i = 0; i < bounds.length; i++) {
        cumulative += counts[i] as number;
        values.push({
          labels: { le: bounds[i] as number, ...labels },
          value: cumulative,
          metricName: `${name}_bucket`,
        });
      }
      values.push({ labels: { le: '+Inf', ...labels }, value: count, metricName: `${name}_bucket` });
      values.push({ labels: { ...labels }, value: sum, metricName: `${name}_sum` });
      values.push({ labels: { ...labels }, value: count, metricName: `${name}_count` });
      return { name, help, type: 'histogram', values, aggregator: 'sum' };
    },
    reset() {
      counts.fill(0);
      sum = 0;
      count = 0;
    },
  };
  for (const registry of options.registers) registry.registerMetric(metric as unknown as Metric);
  return {
    observe(value) {
      let i = 0;
      while (i < bounds.length && value > (bounds[i] as number)) i++;
      counts[i] = (counts[i] as number) + 1;
      sum += value;
      count++;
    },
  };
}
