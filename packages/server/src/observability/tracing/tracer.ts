/**
 * OpenTelemetry tracing of decisions, without the OpenTelemetry SDK: one server span per call, the caller's
 * trace continued from W3C `traceparent` or B3 headers, sampled parent-based with a trace-id ratio (as
 * envoy ratelimit's `ParentBased(TraceIDRatioBased(TRACING_SAMPLING_RATE))`), and exported in batches over
 * OTLP. What tracing may hold is bounded: at most `maxQueue` finished spans wait for export; past that,
 * spans are dropped and counted, never queued without bound, and an unreachable collector never slows a
 * decision (export runs off the request path).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../logger.js';
import { type Carrier, extractParent } from './trace-context.js';

/** An attribute value as OTLP carries it. */
export type AttributeValue = string | number | boolean;

/** A finished span, as the exporters send it. */
export interface SpanRecord {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  /** Start and end, nanoseconds since the epoch, as decimal strings (OTLP's fixed64). */
  readonly startNs: string;
  readonly endNs: string;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /** Set when the call failed. */
  readonly error?: string;
}

/** Sends batches of spans; resolves when done (its failures are reported, never thrown). */
export type SpanExporter = (resource: Readonly<Record<string, string>>, spans: readonly SpanRecord[]) => Promise<void>;

/** Options of {@link createTracer}. */
export interface TracerOptions {
  exporter: SpanExporter;
  /** `service.name`. @default 'RateLimit' (envoy ratelimit's default) */
  serviceName?: string;
  /** `service.namespace`. @default none */
  serviceNamespace?: string;
  /** `service.instance.id`. @default a random UUID, as envoy ratelimit does */
  serviceInstanceId?: string;
  /** Share of new traces recorded, 0 to 1 (a caller's sampled flag wins). @default 1 */
  samplingRate?: number;
  /** Most finished spans waiting for export; more are dropped. @default 2048 (OTel's BSP default) */
  maxQueue?: number;
  /** Most spans per export. @default 512 */
  maxBatch?: number;
  /** How often the queue is exported. @default 5000 */
  scheduleMs?: number;
  logger?: Logger;
}

/** One call's span: end it once with how the call went. */
export interface CallSpan {
  end(attributes: Readonly<Record<string, AttributeValue>>, error?: string): void;
}

/** The tracer of one service. */
export interface Tracer {
  /** A span for a call whose headers are `carrier`; undefined when this trace is not sampled. */
  start(name: string, carrier: Carrier, attributes: Readonly<Record<string, AttributeValue>>): CallSpan | undefined;
  /** Exports what is queued now. */
  flush(): Promise<void>;
  /** Exports what is queued and stops the timer. */
  shutdown(): Promise<void>;
  /** Spans dropped because the queue was full. */
  readonly dropped: number;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const nowNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;

/** TraceIDRatioBased, as OpenTelemetry Go computes it: the trace id's low 63 bits against rate × 2^63. */
export function sampledByRatio(traceId: string, rate: number): boolean {
  if (rate >= 1) return true;
  if (!(rate > 0)) return false;
  return BigInt(`0x${traceId.slice(16)}`) >> 1n < BigInt(Math.floor(rate * 2 ** 63));
}

/** Creates a tracer; its export timer never holds the process open. */
export function createTracer(options: TracerOptions): Tracer {
  const rate = options.samplingRate ?? 1;
  const maxQueue = options.maxQueue ?? 2048;
  const maxBatch = Math.max(1, options.maxBatch ?? 512);
  const resource: Record<string, string> = {
    'service.name': options.serviceName ?? 'RateLimit',
    'service.instance.id': options.serviceInstanceId || randomUUID(),
    'telemetry.sdk.name': 'sluice',
    'telemetry.sdk.language': 'nodejs',
  };
  if (options.serviceNamespace) resource['service.namespace'] = options.serviceNamespace;
  let queue: SpanRecord[] = [];
  let dropped = 0;
  let exporting: Promise<void> = Promise.resolve();
  let warnedFull = false;

  function flush(): Promise<void> {
    exporting = exporting.then(async () => {
      while (queue.length > 0) {
        const batch = queue.slice(0, maxBatch);
        queue = queue.slice(batch.length);
        await options.exporter(resource, batch);
      }
    });
    return exporting;
  }

  const timer = setInterval(() => void flush(), Math.max(10, options.scheduleMs ?? 5000));
  timer.unref();

  return {
    start(name, carrier, attributes) {
      const parent = extractParent(carrier);
      const traceId = parent?.traceId ?? hex(16);
      const sampled = parent?.sampled ?? sampledByRatio(traceId, rate);
      if (!sampled) return undefined;
      const spanId = hex(8);
      const startNs = nowNs();
      let ended = false;
      return {
        end(more, error) {
          if (ended) return;
          ended = true;
          if (queue.length >= maxQueue) {
            dropped++;
            if (!warnedFull) {
              warnedFull = true;
              options.logger?.warn(
                { maxQueue },
                'tracing: the span queue is full (collector slow or down); dropping spans',
              );
            }
            return;
          }
          queue.push({
            traceId,
            spanId,
            ...(parent === undefined ? {} : { parentSpanId: parent.spanId }),
            name,
            startNs: String(startNs),
            endNs: String(nowNs()),
            attributes: { ...attributes, ...more },
            ...(error === undefined ? {} : { error }),
          });
          if (queue.length >= maxBatch) void flush();
        },
      };
    },
    flush,
    async shutdown() {
      clearInterval(timer);
      await flush();
    },
    get dropped() {
      return dropped;
    },
  };
}
