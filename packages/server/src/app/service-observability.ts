/** The service's metrics (Prometheus, per-descriptor series, constant labels) and tracing, from `observability` options. */
import type { Store } from 'sluice';
import type { DecisionHub } from '../observability/decision-events.js';
import { registerDescriptorSeries } from '../observability/descriptor-series.js';
import type { Logger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import { createDisabledMetrics, createMetrics } from '../observability/metrics.js';
import { applyConstantLabels } from '../observability/stats/constant-labels.js';
import { createOtlpExporter } from '../observability/tracing/otlp-exporter.js';
import { createTracer, type Tracer } from '../observability/tracing/tracer.js';
import type { ObservabilityOptions } from './service-options.js';
import { storeStats } from './service-store.js';

/** Metrics and their per-descriptor series; `close` stops the series' bookkeeping. */
export interface ServiceTelemetry {
  readonly metrics: ServiceMetrics;
  /** Present when tracing is on. */
  readonly tracer?: Tracer;
  close(): Promise<void>;
}

/** Builds the metrics (none with `disableStats`) and, with `tracing`, the tracer and its OTLP exporter. */
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
  const tracing = options.tracing;
  const exporter = tracing === undefined ? undefined : createOtlpExporter({ ...tracing.otlp, logger });
  const tracer =
    tracing === undefined || exporter === undefined ? undefined : createTracer({ ...tracing, exporter, logger });
  return {
    metrics,
    ...(tracer === undefined ? {} : { tracer }),
    async close() {
      stopSeries();
      await tracer?.shutdown();
      exporter?.close();
    },
  };
}
