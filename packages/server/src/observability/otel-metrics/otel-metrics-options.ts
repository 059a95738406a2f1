/** OpenTelemetry metrics export (OTLP), from OpenTelemetry's standard variables: OTEL_METRICS_EXPORTER=otlp turns it on. */
import { SluiceError } from 'sluice';
import { otelHeaders } from '../tracing/otlp-env.js';

/** Where and how often decision counts are pushed over OTLP. */
export interface OtelMetricsOptions {
  protocol: 'http' | 'grpc';
  /** For http, the full URL metrics are posted to; for grpc, `http(s)://host:port`. */
  endpoint: string;
  headers: Readonly<Record<string, string>>;
  /** How often metrics are exported. @default 60_000 (OTEL_METRIC_EXPORT_INTERVAL) */
  intervalMs: number;
  /** Longest wait for one export. @default 30_000 (OTEL_METRIC_EXPORT_TIMEOUT) */
  timeoutMs: number;
  /** The resource's `service.name`. @default 'sluice' (OTEL_SERVICE_NAME) */
  serviceName?: string;
}

type Env = Readonly<Record<string, string | undefined>>;

const bad = (name: string, why: string) =>
  new SluiceError('ERR_SLUICE_INVALID_OPTION', `${name}: ${why}`, { option: name });

/** A whole number of milliseconds in [min, max], or the fallback when unset. */
function millis(env: Env, name: string, fallback: number, min: number, max: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max)
    throw bad(name, `'${text}' is not a whole number of ms in ${min}..${max}`);
  return n;
}

/**
 * The export OpenTelemetry's variables ask for, or undefined when `OTEL_METRICS_EXPORTER` does not name
 * `otlp` (unset means off here: the service's metrics are Prometheus's first). `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL`
 * (or `OTEL_EXPORTER_OTLP_PROTOCOL`): `grpc`, or `http/json`; `http/protobuf` is sent as JSON, which
 * collectors take on the same port.
 */
export function otelMetricsFromEnv(env: Env): OtelMetricsOptions | undefined {
  const exporters = (env.OTEL_METRICS_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const unknown = exporters.filter((e) => e !== 'otlp' && e !== 'none' && e !== 'prometheus');
  if (unknown.length > 0) throw bad('OTEL_METRICS_EXPORTER', `'${unknown[0]}' is not otlp, prometheus or none`);
  if (!exporters.includes('otlp')) return undefined;
  const protocolText = (
    env.OTEL_EXPORTER_OTLP_METRICS_PROTOCOL ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL ||
    'http/json'
  ).toLowerCase();
  if (protocolText !== 'grpc' && protocolText !== 'http/json' && protocolText !== 'http/protobuf') {
    throw bad('OTEL_EXPORTER_OTLP_PROTOCOL', `'${protocolText}' is not grpc, http/json or http/protobuf`);
  }
  const protocol = protocolText === 'grpc' ? 'grpc' : 'http';
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const endpoint =
    env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT ||
    (protocol === 'http'
      ? `${(base || 'http://localhost:4318').replace(/\/+$/, '')}/v1/metrics`
      : base || 'http://localhost:4317');
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw bad('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', `'${endpoint}' is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw bad('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', `'${endpoint}' is not an http(s) URL`);
  }
  return {
    protocol,
    endpoint,
    headers: { ...otelHeaders(env.OTEL_EXPORTER_OTLP_HEADERS), ...otelHeaders(env.OTEL_EXPORTER_OTLP_METRICS_HEADERS) },
    intervalMs: millis(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000, 100, 86_400_000),
    timeoutMs: millis(env, 'OTEL_METRIC_EXPORT_TIMEOUT', 30_000, 100, 600_000),
    ...(env.OTEL_SERVICE_NAME ? { serviceName: env.OTEL_SERVICE_NAME.slice(0, 256) } : {}),
  };
}
