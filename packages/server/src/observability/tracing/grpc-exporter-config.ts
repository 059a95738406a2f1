/** What OpenTelemetry's OTLP/gRPC exporters (spans and metrics) take: the URL, headers as metadata, TLS when the URL is https. */
import { type ChannelCredentials, credentials, Metadata } from '@grpc/grpc-js';

/** The config of an OTLP/gRPC exporter sending to `endpoint` with `headers`. */
export function grpcExporterConfig(
  endpoint: string,
  headers: Readonly<Record<string, string>> | undefined,
  timeoutMillis: number,
): { url: string; metadata: Metadata; timeoutMillis: number; credentials: ChannelCredentials } {
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(headers ?? {})) metadata.set(k, v);
  const secure = new URL(endpoint).protocol === 'https:';
  return {
    url: endpoint,
    metadata,
    timeoutMillis,
    credentials: secure ? credentials.createSsl() : credentials.createInsecure(),
  };
}
