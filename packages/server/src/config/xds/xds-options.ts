/** How to reach an xDS management server (envoy ratelimit's CONFIG_GRPC_XDS_* settings). */
import type { XdsBackoff } from './backoff.js';

/** Where and how to reach an xDS management server (envoy ratelimit's CONFIG_GRPC_XDS_* settings). */
export interface XdsOptions {
  /** `host:port` of the management server. */
  server: string;
  /** The node id sent in every DiscoveryRequest. @default 'default' */
  nodeId: string;
  /** Node metadata (string values). */
  nodeMetadata?: Readonly<Record<string, string>>;
  /** Extra gRPC metadata sent with the stream. */
  headers?: Readonly<Record<string, string>>;
  /** Wait before reconnecting after the stream ends, without `backoff`. @default 3000 */
  retryMs?: number;
  /** Waits that grow between reconnects (envoy's XDS_CLIENT_BACKOFF_*); after a config is accepted they start over. */
  backoff?: XdsBackoff;
  /** Serve before the first config arrives (every domain unknown: OK). @default false: wait for it */
  forceStart?: boolean;
  /** Largest DiscoveryResponse accepted. @default 4 MiB */
  maxMessageBytes?: number;
  /** TLS to the management server. */
  tls?: { caFile?: string; certFile?: string; keyFile?: string; serverName?: string };
}
