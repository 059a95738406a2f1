/** The gateway's time and concurrency bounds, and their defaults (each has a `sluice serve` flag; see docs/security.md). */

/** Time and concurrency bounds of the gateway. */
export interface GatewayLimits {
  /** Longest time to receive a request's headers. @default 10 s */
  readonly headersTimeoutMs: number;
  /** Longest time to receive a whole request, body included (a slow upload is cut with 408). @default 30 s */
  readonly requestTimeoutMs: number;
  /** Longest silence on a client or upstream connection while a request is in flight. @default 30 s */
  readonly idleTimeoutMs: number;
  /** Longest wait for the upstream's response headers once the whole request is sent (504 after). @default 30 s */
  readonly upstreamTimeoutMs: number;
  /** Most requests one client (address, IPv6 /56) may have in flight through the gateway. @default 64 */
  readonly maxClientInFlight: number;
  /** Connections to the upstream, at most. @default 256 */
  readonly maxUpstreamSockets: number;
}

export const DEFAULT_GATEWAY_LIMITS: GatewayLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  upstreamTimeoutMs: 30_000,
  maxClientInFlight: 64,
  maxUpstreamSockets: 256,
};
