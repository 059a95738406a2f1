/** The service's metrics (Prometheus, per-descriptor series, constant labels) and tracing, from `observability` options. */
import { Gauge } from 'prom-client';
import type { Store } from 'sluice';
import type { DecisionHub } from '../observability/decision-events.js';
import { registerDescriptorSeries } from '../observability/descriptor-series.js';
import { createEnvoyTelemetry, type EnvoyTelemetry } from '../observability/envoy-stats/envoy-telemetry.js';
import type { Logger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import { createDisabledMetrics, createMetrics } from '../observability/metrics.js';
import { startOtelMetrics } from '../observability/otel-metrics/otel-metrics.js';
import { applyConstantLabels } from '../observability/stats/constant-labels.js';
import { createTracer, type Tracer } from '../observability/tracing/tracer.js';
import type { ObservabilityOptions } from './service-options.js';
import { storeStats } from './service-store.js';

/** Metrics and their per-descriptor series; `close` stops the series' bookkeeping. */
export interface ServiceTelemetry {
  readonly metrics: ServiceMetrics;
  /** Present when tracing is on. */
  readonly tracer?: Tracer;
  /** envoy ratelimit's stats, in envoy mode (`envoyStats`). */
  readonly envoy?: EnvoyTelemetry;
  /** What the metrics listener serves: sluice's metrics, then envoy's Prometheus names with USE_PROMETHEUS. */
  readonly listenerMetrics: ServiceMetrics;
  close(): Promise<void>;
}

/** Builds the metrics (none with `disableStats`) and, with `tracing`, the tracer (OpenTelemetry SDK, OTLP). */
export function createServiceTelemetry(
  options: ObservabilityOptions,
  hub: DecisionHub,
  store: Store,
  logger: Logger,
): ServiceTelemetry {
  const disabled = options.disableStats === true;
  const metrics = disabled
    ? createDisabledMetrics()
    : createMetrics({ hub, storeName: store.name, storeStats: () => storeStats(store) });
  const stopSeries = disabled
    ? () => {}
    : registerDescriptorSeries(metrics.registry, hub, {
        ...(options.maxDescriptorSeries === undefined ? {} : { maxSeries: options.maxDescriptorSeries }),
      });
  if (options.metricsLabels !== undefined) applyConstantLabels(metrics.registry, options.metricsLabels);
  const envoy =
    disabled || options.envoyStats === undefined
      ? undefined
      : createEnvoyTelemetry({
          // envoy's keys are bounded as sluice's per-value series are (--max-descriptor-series).
          ...(options.maxDescriptorSeries === undefined ? {} : { maxSeries: options.maxDescriptorSeries }),
          ...options.envoyStats,
        });
  const tracing = options.tracing;
  // The OpenTelemetry SDK is imported only here, when tracing is on.
  const tracer = tracing === undefined ? undefined : createTracer({ ...tracing, logger });
  // Likewise the metrics SDK, with OTEL_METRICS_EXPORTER=otlp: decisions pushed over OTLP beside Prometheus.
  const otelMetrics =
    options.otelMetrics === undefined ? undefined : startOtelMetrics(options.otelMetrics, hub, logger);
  return {
    ...(envoy === undefined ? { metrics, listenerMetrics: metrics } : withEnvoyStats(metrics, envoy)),
    ...(tracer === undefined ? {} : { tracer }),
    ...(envoy === undefined ? {} : { envoy }),
    async close() {
      stopSeries();
      await envoy?.close();
      await tracer?.shutdown();
      await otelMetrics?.close();
    },
  };
}

/** sluice's metrics that also count envoy's config loads, and the listener's page with envoy's names after sluice's. */
function withEnvoyStats(
  metrics: ServiceMetrics,
  envoy: EnvoyTelemetry,
): { metrics: ServiceMetrics; listenerMetrics: ServiceMetrics } {
  new Gauge({
    name: 'sluice_envoy_stats_dropped',
    help: "envoy ratelimit's statsd lines and timer samples dropped (statsd unreachable, the sample buffer full).",
    registers: [metrics.registry],
    collect() {
      this.set(envoy.stats.dropped);
    },
  });
  const counted: ServiceMetrics = {
    ...metrics,
    reload(result) {
      metrics.reload(result);
      envoy.stats.count(result === 'ok' ? 'configLoadSuccess' : 'configLoadError');
    },
  };
  const listenerMetrics: ServiceMetrics = {
    ...counted,
    render: async () => `${await metrics.render()}${envoy.render()}`,
  };
  return { metrics: counted, listenerMetrics };
}
