/**
 * The xDS source's connection to its management server: the gRPC client (TLS, keepalive, the message bound)
 * and one Aggregated Discovery Service stream, its messages coded by protobufjs.
 */
import { readFileSync } from 'node:fs';
import { Client, type ClientDuplexStream, credentials, Metadata } from '@grpc/grpc-js';
import { xdsProtoRoot } from './rls-config.js';
import type { XdsOptions } from './xds-options.js';

const ADS_METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

/** google.protobuf.Any as protobufjs decodes it (its built-in definition keeps the snake_case name). */
export interface AnyMessage {
  type_url?: string;
  typeUrl?: string;
  value?: Uint8Array;
}

/** A DiscoveryResponse as protobufjs decodes it. */
export interface DiscoveryResponse {
  versionInfo?: string;
  resources?: AnyMessage[];
  typeUrl?: string;
  nonce?: string;
}

/** One open ADS stream: DiscoveryRequests out, DiscoveryResponses in. */
export type AdsStream = ClientDuplexStream<Record<string, unknown>, DiscoveryResponse>;

/** The node sluice introduces itself as on the ADS stream. */
export function nodeOf(options: XdsOptions) {
  return {
    id: options.nodeId,
    userAgentName: 'sluice',
    metadata: {
      fields: Object.fromEntries(Object.entries(options.nodeMetadata ?? {}).map(([k, v]) => [k, { stringValue: v }])),
    },
  };
}

/** Opens one ADS stream (DiscoveryRequest / DiscoveryResponse, coded by protobufjs) with the configured headers. */
export function openAdsStream(client: Client, headers: XdsOptions['headers']): AdsStream {
  const root = xdsProtoRoot();
  const Request = root.lookupType('envoy.service.discovery.v3.DiscoveryRequest');
  const Response = root.lookupType('envoy.service.discovery.v3.DiscoveryResponse');
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(headers ?? {})) metadata.set(k, v);
  return client.makeBidiStreamRequest(
    ADS_METHOD,
    (message: Record<string, unknown>) => Buffer.from(Request.encode(Request.fromObject(message)).finish()),
    (bytes: Buffer) =>
      Response.toObject(Response.decode(bytes), { defaults: false, bytes: Buffer }) as DiscoveryResponse,
    metadata,
  );
}

/** The gRPC client of the management server (TLS, keepalive, the message bound). */
export function createAdsClient(options: XdsOptions): Client {
  return new Client(options.server, channelCredentials(options), {
    'grpc.max_receive_message_length': options.maxMessageBytes ?? 4 * 1024 * 1024,
    // A management server that vanished without closing the connection is noticed, and the stream reopened.
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    ...(options.tls?.serverName === undefined ? {} : { 'grpc.ssl_target_name_override': options.tls.serverName }),
  });
}

function channelCredentials(options: XdsOptions) {
  const tls = options.tls;
  if (tls === undefined) return credentials.createInsecure();
  const read = (f: string | undefined) => (f === undefined ? null : readFileSync(f));
  const creds = credentials.createSsl(read(tls.caFile), read(tls.keyFile), read(tls.certFile));
  return creds;
}
