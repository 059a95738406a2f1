/** Where OTLP spans go, from OpenTelemetry's standard variables (OTEL_EXPORTER_OTLP_*), as envoy ratelimit's exporters read them. */

/** Where and how spans are sent. */
export interface OtlpOptions {
  protocol: 'http' | 'grpc';
  /** For http, the full URL spans are posted to; for grpc, `http(s)://host:port`. */
  endpoint: string;
  headers?: Readonly<Record<string, string>>;
  /** Longest wait for one export. @default 10_000 */
  timeoutMs?: number;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Most headers taken from one variable: a hostile or mistaken value cannot make an export carry thousands. */
const MAX_HEADERS = 64;

/** `k1=v1,k2=v2` with percent-encoded values (OTEL_EXPORTER_OTLP_HEADERS); a pair that does not decode is skipped. */
export function otelHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? '').split(',').slice(0, MAX_HEADERS)) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      out[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      // A stray '%': not a header the collector could want.
    }
  }
  return out;
}

/**
 * The endpoint and headers OpenTelemetry's variables give: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as
 * is), else `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces` over http), else localhost:4318 (http) or
 * localhost:4317 (grpc); headers from `OTEL_EXPORTER_OTLP_HEADERS` and `..._TRACES_HEADERS`.
 */
export function otlpFromEnv(env: Env, protocol: 'http' | 'grpc'): OtlpOptions {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const endpoint =
    specific ||
    (protocol === 'http'
      ? `${(base || 'http://localhost:4318').replace(/\/+$/, '')}/v1/traces`
      : base || 'http://localhost:4317');
  return {
    protocol,
    endpoint,
    headers: { ...otelHeaders(env.OTEL_EXPORTER_OTLP_HEADERS), ...otelHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
  };
}
