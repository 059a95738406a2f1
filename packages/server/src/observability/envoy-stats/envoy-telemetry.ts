/**
 * envoy ratelimit's stats in envoy mode, from its settings: the counters, the statsd sender (USE_STATSD)
 * and the Prometheus page of its names (USE_PROMETHEUS). Outside envoy mode none of this exists.
 */
import { createEnvoyStats, type EnvoyStats } from './envoy-stats.js';
import { createResponseTimeHistogram, renderEnvoyPrometheus } from './prometheus-names.js';
import { tagSuffix } from './stat-key.js';
import { type StatsdSink, startStatsdSink } from './statsd-sink.js';

/** envoy ratelimit's stats settings (USE_STATSD, STATSD_*, STATS_FLUSH_INTERVAL, EXTRA_TAGS, USE_PROMETHEUS). */
export interface EnvoyStatsOptions {
  /** Send statsd over UDP (USE_STATSD). */
  statsd?: { host: string; port: number; flushIntervalMs: number };
  /** Serve envoy's Prometheus names beside sluice's on the metrics listener (USE_PROMETHEUS). */
  prometheus?: { responseTimeAsMilliseconds: boolean };
  /** EXTRA_TAGS: a gostats tag suffix on statsd names, labels on the Prometheus series. */
  extraTags?: Readonly<Record<string, string>>;
  /** Most descriptor keys with series of their own. @default 10_000 */
  maxSeries?: number;
  /** Most response-time samples kept between two statsd flushes. @default 10_000 */
  maxTimerSamples?: number;
  /** The rules were loaded before the stats started (files): count that load's config_load_success. */
  countFirstLoad?: boolean;
}

/** The running stats and their sinks. */
export interface EnvoyTelemetry {
  readonly stats: EnvoyStats;
  /** envoy's Prometheus text (empty without USE_PROMETHEUS). */
  render(): string;
  close(): Promise<void>;
}

/** Starts counting, and the sinks `options` asks for. */
export function createEnvoyTelemetry(options: EnvoyStatsOptions): EnvoyTelemetry {
  const histogram =
    options.prometheus === undefined
      ? undefined
      : createResponseTimeHistogram(options.prometheus.responseTimeAsMilliseconds);
  const stats = createEnvoyStats({
    ...(options.maxSeries === undefined ? {} : { maxSeries: options.maxSeries }),
    maxTimerSamples: options.statsd === undefined ? 0 : (options.maxTimerSamples ?? 10_000),
    ...(histogram === undefined ? {} : { onResponseTime: (ms: number) => histogram.observe(ms) }),
  });
  if (options.countFirstLoad === true) stats.count('configLoadSuccess');
  const tags = options.extraTags ?? {};
  const sink: StatsdSink | undefined =
    options.statsd === undefined
      ? undefined
      : startStatsdSink(stats, {
          host: options.statsd.host,
          port: options.statsd.port,
          flushIntervalMs: options.statsd.flushIntervalMs,
          tagSuffix: tagSuffix(tags),
        });
  return {
    stats,
    render: () => (histogram === undefined ? '' : renderEnvoyPrometheus(stats, histogram, tags)),
    close: async () => {
      await sink?.close();
    },
  };
}
