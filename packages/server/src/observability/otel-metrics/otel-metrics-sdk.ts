/** The OpenTelemetry metrics SDK pushing decision counts over OTLP (HTTP JSON or gRPC); imported only when OTEL_METRICS_EXPORTER=otlp. */
import { ExportResultCode } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { Logger } from '../logger.js';
import { grpcExporterConfig } from '../tracing/grpc-exporter-config.js';
import { throttled } from '../tracing/throttled-warning.js';
import type { DecisionTally } from './decision-tally.js';
import type { OtelMetricsOptions } from './otel-metrics-options.js';

/** The name of the observable counter, and the attributes it carries (those of sluice_decisions_total). */
export const DECISIONS_METRIC = 'sluice.decisions';

async function createExporter(options: OtelMetricsOptions, logger: Logger | undefined): Promise<PushMetricExporter> {
  const timeoutMillis = options.timeoutMs;
  let exporter: PushMetricExporter;
  if (options.protocol === 'grpc') {
    const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-grpc');
    exporter = new OTLPMetricExporter(grpcExporterConfig(options.endpoint, options.headers, timeoutMillis));
  } else {
    const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-http');
    exporter = new OTLPMetricExporter({ url: options.endpoint, headers: { ...options.headers }, timeoutMillis });
  }
  const warn = throttled(logger);
  return {
    export(metrics, done) {
      exporter.export(metrics, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) {
          warn({ endpoint: options.endpoint, why: result.error?.message }, 'metrics: OTLP export failed');
        }
        done(result);
      });
    },
    forceFlush: () => exporter.forceFlush(),
    shutdown: () => exporter.shutdown(),
    ...(exporter.selectAggregationTemporality === undefined
      ? {}
      : { selectAggregationTemporality: exporter.selectAggregationTemporality.bind(exporter) }),
  };
}

/** A meter provider whose reader pushes the tally every `intervalMs`; shut it down to push the last counts. */
export async function createMetricsExport(
  options: OtelMetricsOptions,
  tally: DecisionTally,
  logger: Logger | undefined,
): Promise<MeterProvider> {
  const reader = new PeriodicExportingMetricReader({
    exporter: await createExporter(options, logger),
    exportIntervalMillis: options.intervalMs,
    exportTimeoutMillis: Math.min(options.timeoutMs, options.intervalMs),
  });
  const provider = new MeterProvider({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': options.serviceName ?? 'sluice' })),
    readers: [reader],
  });
  const decisions = provider.getMeter('sluice-server').createObservableCounter(DECISIONS_METRIC, {
    description: 'Rate-limit decisions, by domain, rule and outcome (ok, near_limit, over_limit, shadow; exclusive).',
    unit: '{decision}',
  });
  decisions.addCallback((result) => {
    for (const row of tally.rows()) {
      result.observe(row.count, {
        'sluice.domain': row.domain,
        'sluice.rule': row.rule,
        'sluice.outcome': row.outcome,
      });
    }
  });
  return provider;
}
