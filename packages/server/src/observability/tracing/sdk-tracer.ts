/**
 * The service's tracer on the OpenTelemetry SDK, loaded by tracer.ts only when tracing is on: a
 * BasicTracerProvider sampling ParentBased(TraceIdRatioBased(rate)) as envoy ratelimit does, a batch span
 * processor bounded by OTEL_BSP_*, OTLP over HTTP (JSON) or gRPC, and the caller's trace read by the W3C
 * trace-context and B3 propagators. Nothing is registered globally: the service's tracer is its own.
 */
import { randomUUID } from 'node:crypto';
import {
  type Context,
  DiagLogLevel,
  diag,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
} from '@opentelemetry/api';
import { CompositePropagator, ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { B3Propagator } from '@opentelemetry/propagator-b3';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../logger.js';
import type { AttributeValue } from './call-span.js';
import { grpcExporterConfig } from './grpc-exporter-config.js';
import type { OtlpOptions } from './otlp-env.js';
import { throttled } from './throttled-warning.js';
import { type Carrier, headerNames, headerOf } from './trace-context.js';
import type { TracingOptions } from './tracing-options.js';

/** A call's span that may be ended at a given time (epoch ms): a CallSpan. */
export interface TimedSpan {
  end(more: Readonly<Record<string, AttributeValue>>, error?: string, endTime?: number): void;
}

/** The SDK tracer the facade in tracer.ts hands calls to once loaded. */
export interface SdkTracer {
  /** A span for a call, started at `startTime` (epoch ms) when given; undefined when its trace is not sampled. */
  start(
    name: string,
    carrier: Carrier,
    attributes: Readonly<Record<string, AttributeValue>>,
    startTime?: number,
  ): TimedSpan | undefined;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const getter: TextMapGetter<Carrier> = { get: headerOf, keys: headerNames };

/** W3C `traceparent` wins over B3 (the composite's last propagator that finds a parent sets it), as in envoy ratelimit. */
const propagator = new CompositePropagator({ propagators: [new B3Propagator(), new W3CTraceContextPropagator()] });

/** The OTLP exporter for `otlp.protocol`, its failures logged (throttled): spans of a failed export are dropped. */
async function createExporter(otlp: OtlpOptions, logger: Logger | undefined): Promise<SpanExporter> {
  const timeoutMillis = otlp.timeoutMs ?? 10_000;
  let exporter: SpanExporter;
  if (otlp.protocol === 'grpc') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-grpc');
    exporter = new OTLPTraceExporter(grpcExporterConfig(otlp.endpoint, otlp.headers, timeoutMillis));
  } else {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    exporter = new OTLPTraceExporter({ url: otlp.endpoint, headers: { ...otlp.headers }, timeoutMillis });
  }
  const warn = throttled(logger);
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) {
          warn(
            { endpoint: otlp.endpoint, why: result.error?.message, spans: spans.length },
            'tracing: export failed; spans dropped',
          );
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/** Where the SDK's own warnings go: the last tracer's logger (one process has one service). */
let diagTarget: ((fields: Record<string, unknown>, message: string) => void) | undefined;

/** The SDK's own warnings (a full span queue, a bad setting) in the service's log, throttled; diag is set once per process. */
function routeDiagnostics(logger: Logger | undefined): void {
  const first = diagTarget === undefined;
  diagTarget = throttled(logger);
  if (!first) return;
  const report = (message: string) => diagTarget?.({ otel: message }, 'tracing: OpenTelemetry SDK warning');
  const ignore = () => {};
  diag.setLogger({ error: report, warn: report, info: ignore, debug: ignore, verbose: ignore }, DiagLogLevel.WARN);
}

/** Builds the provider, its processor and exporter. */
export async function createSdkTracer(options: TracingOptions & { logger?: Logger }): Promise<SdkTracer> {
  routeDiagnostics(options.logger);
  const resource = defaultResource().merge(
    resourceFromAttributes({
      'service.name': options.serviceName ?? 'RateLimit',
      'service.instance.id': options.serviceInstanceId || randomUUID(),
      ...(options.serviceNamespace ? { 'service.namespace': options.serviceNamespace } : {}),
    }),
  );
  const maxQueueSize = options.maxQueue ?? 2048;
  const processor = new BatchSpanProcessor(await createExporter(options.otlp, options.logger), {
    scheduledDelayMillis: Math.max(10, options.scheduleMs ?? 5000),
    maxQueueSize,
    maxExportBatchSize: Math.min(Math.max(1, options.maxBatch ?? 512), maxQueueSize),
    exportTimeoutMillis: options.otlp.timeoutMs ?? 10_000,
  });
  const provider = new BasicTracerProvider({
    resource,
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.samplingRate ?? 1) }),
    spanProcessors: [processor],
  });
  const tracer = provider.getTracer('sluice-server');
  return {
    start(name, carrier, attributes, startTime) {
      const parent: Context = carrier === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, carrier, getter);
      const span = tracer.startSpan(
        name,
        { kind: SpanKind.SERVER, attributes, ...(startTime === undefined ? {} : { startTime }) },
        parent,
      );
      if (!span.isRecording()) return undefined;
      let ended = false;
      return {
        end(more, error, endTime) {
          if (ended) return;
          ended = true;
          span.setAttributes(more);
          if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
          span.end(endTime);
        },
      };
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
