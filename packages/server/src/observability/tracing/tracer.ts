/**
 * Tracing of decisions on the OpenTelemetry SDK (sdk-tracer.ts), imported only when tracing is on: one
 * server span per call, the caller's trace continued from W3C `traceparent` or B3 headers, exported in
 * bounded batches over OTLP. The SDK loads in the background; a call that arrives before it is there is
 * still traced, its span made once the SDK has loaded, with the call's own start and end times.
 */
import type { Logger } from '../logger.js';
import type { AttributeValue, CallSpan } from './call-span.js';
import type { SdkTracer } from './sdk-tracer.js';
import type { Carrier } from './trace-context.js';
import type { TracingOptions } from './tracing-options.js';

export type { AttributeValue, CallSpan } from './call-span.js';

/** The tracer of one service. */
export interface Tracer {
  /** A span for a call whose headers are `carrier`; undefined when this trace is not sampled. */
  start(name: string, carrier: Carrier, attributes: Readonly<Record<string, AttributeValue>>): CallSpan | undefined;
  /** Exports what is queued now. */
  flush(): Promise<void>;
  /** Exports what is queued and stops the exporter. */
  shutdown(): Promise<void>;
  /** Settles once the SDK has loaded (true) or failed to (false: tracing is off, and the error logged). */
  readonly ready: Promise<boolean>;
}

/** Options of {@link createTracer}: the TRACING_* settings and where to report export failures. */
export interface TracerOptions extends TracingOptions {
  logger?: Logger;
}

/** Creates the tracer; the OpenTelemetry SDK is imported now, in the background. */
export function createTracer(options: TracerOptions): Tracer {
  let sdk: SdkTracer | undefined;
  let failed = false;
  const ready = import('./sdk-tracer.js')
    .then((m) => m.createSdkTracer(options))
    .then(
      (loaded) => {
        sdk = loaded;
        return true;
      },
      (error: unknown) => {
        failed = true;
        options.logger?.error({ err: error }, 'tracing: the OpenTelemetry SDK did not start; decisions are not traced');
        return false;
      },
    );
  return {
    start(name, carrier, attributes) {
      if (sdk !== undefined) return sdk.start(name, carrier, attributes);
      if (failed) return undefined;
      const startTime = Date.now();
      return {
        end(more, error) {
          const endTime = Date.now();
          void ready.then(() => sdk?.start(name, carrier, attributes, startTime)?.end(more, error, endTime));
        },
      };
    },
    async flush() {
      await ready;
      await sdk?.flush();
    },
    async shutdown() {
      await ready;
      await sdk?.shutdown();
    },
    ready,
  };
}
