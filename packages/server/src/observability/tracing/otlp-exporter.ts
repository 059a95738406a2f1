/**
 * OTLP span exporters: HTTP with JSON bodies (`POST <endpoint>/v1/traces`, what collectors, Jaeger and
 * Tempo accept on port 4318) and gRPC (`TraceService/Export`, port 4317), as envoy ratelimit's
 * TRACING_EXPORTER_PROTOCOL chooses. The endpoint and headers come from OpenTelemetry's standard
 * variables, as in envoy ratelimit (its exporters read them implicitly). A failed export is logged (at
 * most once a minute) and its spans dropped; nothing is retried, so a dead collector costs nothing.
 */
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { PROTO_DIR } from '../../support/proto.js';
import type { Logger } from '../logger.js';
import type { AttributeValue, SpanExporter, SpanRecord } from './tracer.js';

/** Where and how spans are sent. */
export interface OtlpOptions {
  protocol: 'http' | 'grpc';
  /** For http, the full URL spans are posted to; for grpc, `http(s)://host:port`. */
  endpoint: string;
  headers?: Readonly<Record<string, string>>;
  /** Longest wait for one export. @default 10_000 */
  timeoutMs?: number;
  logger?: Logger;
}

type Env = Readonly<Record<string, string | undefined>>;

/** `k1=v1,k2=v2` with percent-encoded values (OTEL_EXPORTER_OTLP_HEADERS). */
function otelHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) out[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return out;
}

/**
 * The endpoint and headers OpenTelemetry's variables give: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as
 * is), else `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces` over http), else localhost:4318 (http) or
 * localhost:4317 (grpc); headers from `OTEL_EXPORTER_OTLP_HEADERS` and `..._TRACES_HEADERS`.
 */
export function otlpFromEnv(env: Env, protocol: 'http' | 'grpc'): Omit<OtlpOptions, 'logger'> {
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

/** An attribute as OTLP's JSON mapping writes it (int64 as a decimal string). */
function anyValue(value: AttributeValue): Record<string, unknown> {
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
}

const attributes = (record: Readonly<Record<string, AttributeValue>>) =>
  Object.entries(record).map(([key, value]) => ({ key, value: anyValue(value) }));

/** `ExportTraceServiceRequest` as OTLP/JSON (ids in hex, SPAN_KIND_SERVER, STATUS_CODE_ERROR on failure). */
export function exportRequest(resource: Readonly<Record<string, string>>, spans: readonly SpanRecord[]) {
  return {
    resourceSpans: [
      {
        resource: { attributes: attributes(resource) },
        scopeSpans: [
          {
            scope: { name: 'sluice' },
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId === undefined ? {} : { parentSpanId: s.parentSpanId }),
              name: s.name,
              kind: 2,
              startTimeUnixNano: s.startNs,
              endTimeUnixNano: s.endNs,
              attributes: attributes(s.attributes),
              status: s.error === undefined ? {} : { code: 2, message: s.error },
            })),
          },
        ],
      },
    ],
  };
}

let exportType: protobuf.Type | undefined;

/** The request as protobuf bytes (ids as bytes), for OTLP/gRPC. */
export function encodeExportRequest(resource: Readonly<Record<string, string>>, spans: readonly SpanRecord[]): Buffer {
  if (exportType === undefined) {
    const root = protobuf.loadSync(`${PROTO_DIR}opentelemetry/proto/collector/trace/v1/trace_service.proto`);
    exportType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  }
  const json = exportRequest(resource, spans);
  for (const span of json.resourceSpans[0]?.scopeSpans[0]?.spans ?? []) {
    const s = span as Record<string, unknown>;
    for (const id of ['traceId', 'spanId', 'parentSpanId']) {
      if (typeof s[id] === 'string') s[id] = Buffer.from(s[id] as string, 'hex');
    }
  }
  return Buffer.from(exportType.encode(exportType.fromObject(json)).finish());
}

/** Creates the exporter `options` describe. */
export function createOtlpExporter(options: OtlpOptions): SpanExporter & { close(): void } {
  const timeoutMs = options.timeoutMs ?? 10_000;
  let lastWarnMs = 0;
  const warn = (why: string, count: number) => {
    if (Date.now() - lastWarnMs < 60_000) return;
    lastWarnMs = Date.now();
    options.logger?.warn({ endpoint: options.endpoint, why, spans: count }, 'tracing: export failed; spans dropped');
  };
  if (options.protocol === 'http') {
    const exporter = async (resource: Readonly<Record<string, string>>, spans: readonly SpanRecord[]) => {
      try {
        const res = await fetch(options.endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...options.headers },
          body: JSON.stringify(exportRequest(resource, spans)),
          signal: AbortSignal.timeout(timeoutMs),
        });
        await res.arrayBuffer();
        if (!res.ok) warn(`HTTP ${res.status}`, spans.length);
      } catch (error) {
        warn((error as Error).message, spans.length);
      }
    };
    return Object.assign(exporter, { close() {} });
  }
  const url = new URL(options.endpoint);
  const target = `${url.hostname.includes(':') ? `[${url.hostname}]` : url.hostname}:${url.port || (url.protocol === 'https:' ? 443 : 4317)}`;
  const client = new Client(target, url.protocol === 'https:' ? credentials.createSsl() : credentials.createInsecure());
  const exporter = (resource: Readonly<Record<string, string>>, spans: readonly SpanRecord[]) =>
    new Promise<void>((resolve) => {
      const metadata = new Metadata();
      for (const [k, v] of Object.entries(options.headers ?? {})) metadata.set(k, v);
      client.makeUnaryRequest(
        '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        (b: Buffer) => b,
        (b: Buffer) => b,
        encodeExportRequest(resource, spans),
        metadata,
        { deadline: new Date(Date.now() + timeoutMs) },
        (error: ServiceError | null) => {
          if (error) warn(error.message, spans.length);
          resolve();
        },
      );
    });
  return Object.assign(exporter, { close: () => client.close() });
}
