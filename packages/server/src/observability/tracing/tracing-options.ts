/** The tracing options (envoy ratelimit's TRACING_* settings). */
import type { OtlpOptions } from './otlp-env.js';

/** Tracing of decisions (envoy ratelimit's TRACING_* settings). */
export interface TracingOptions {
  /** Where spans go. */
  otlp: OtlpOptions;
  /** `service.name`. @default 'RateLimit' */
  serviceName?: string;
  /** `service.namespace`. */
  serviceNamespace?: string;
  /** `service.instance.id`. @default a random UUID */
  serviceInstanceId?: string;
  /** Share of new traces recorded, 0 to 1; a caller's sampled flag wins. @default 1 */
  samplingRate?: number;
  /** How often queued spans are exported. @default 5000 */
  scheduleMs?: number;
  /** Most finished spans waiting for export; more are dropped and counted. @default 2048 */
  maxQueue?: number;
  /** Most spans per export. @default 512 */
  maxBatch?: number;
}
