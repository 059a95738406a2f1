/**
 * `sluice serve`'s flags for the service's own bounds (gRPC receive limits, Watch slots, gateway timeouts and caps).
 */
import { parseDuration } from 'sluice';
import type { ServiceOptions } from '../../index.js';

/**
 * The `sluice serve` flags that set the service's own bounds (docs/security.md lists each with its
 * default). Kept apart from serve.ts: they are many, and they change together with that page.
 */
export const LIMIT_FLAGS_HELP = `limits (defaults in docs/security.md):
  --grpc-max-message BYTES       largest gRPC request message (default 1048576)
  --grpc-connection-buffer BYTES unfinished gRPC request bytes one connection may hold (default 4194304)
  --grpc-total-buffer BYTES      unfinished gRPC request bytes all connections may hold (default 67108864)
  --grpc-message-timeout D       longest time for a gRPC request message to arrive (default 10s)
  --grpc-max-streams N           concurrent streams per gRPC connection (default 4096)
  --grpc-max-watches N           open health Watch calls in all (default 1000)
  --grpc-max-client-watches N    open health Watch calls from one client address (IPv6: its /56) (default 64)
  --gateway-request-timeout D    longest time to receive a whole request, body included (default 30s)
  --gateway-headers-timeout D    longest time to receive a request's headers (default 10s)
  --gateway-idle-timeout D       longest silence on a gateway or upstream connection (default 30s)
  --upstream-timeout D           longest wait for the upstream's response headers (default 30s)
  --gateway-max-client-inflight N  requests one client (IPv6: its /56) may have in flight (default 64)
  --upstream-max-sockets N       connections to the upstream (default 256)
  --ipv6-subnet N                prefix length IPv6 clients are keyed by (default 56)
`;

/** parseArgs specs of the limit flags. */
export const LIMIT_FLAGS = {
  'grpc-max-message': { type: 'string' },
  'grpc-connection-buffer': { type: 'string' },
  'grpc-total-buffer': { type: 'string' },
  'grpc-message-timeout': { type: 'string' },
  'grpc-max-streams': { type: 'string' },
  'grpc-max-watches': { type: 'string' },
  'grpc-max-client-watches': { type: 'string' },
  'gateway-request-timeout': { type: 'string' },
  'gateway-headers-timeout': { type: 'string' },
  'gateway-idle-timeout': { type: 'string' },
  'upstream-timeout': { type: 'string' },
  'gateway-max-client-inflight': { type: 'string' },
  'upstream-max-sockets': { type: 'string' },
  'ipv6-subnet': { type: 'string' },
} as const;

/** A flag's value that is not what it should be (the CLI prints it with the help, exit 2). */
export class LimitFlagError extends Error {}

function whole(value: string | undefined, flag: string, what: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new LimitFlagError(`--${flag}: expected a whole number of ${what} (≥ 1)`);
  return n;
}

function duration(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseDuration(value, `--${flag}`);
  if (ms < 1) throw new LimitFlagError(`--${flag}: expected a duration above 0, e.g. 10s`);
  return ms;
}

/** Sets the options the limit flags in `values` give. */
export function applyLimitFlags(values: Partial<Record<keyof typeof LIMIT_FLAGS, string>>, options: ServiceOptions) {
  const limits = definedOnly({
    maxMessageBytes: whole(values['grpc-max-message'], 'grpc-max-message', 'bytes'),
    maxConnectionBufferBytes: whole(values['grpc-connection-buffer'], 'grpc-connection-buffer', 'bytes'),
    maxTotalBufferBytes: whole(values['grpc-total-buffer'], 'grpc-total-buffer', 'bytes'),
    messageTimeoutMs: duration(values['grpc-message-timeout'], 'grpc-message-timeout'),
  });
  const watchLimits = definedOnly({
    maxWatches: whole(values['grpc-max-watches'], 'grpc-max-watches', 'calls'),
    maxWatchesPerClient: whole(values['grpc-max-client-watches'], 'grpc-max-client-watches', 'calls'),
  });
  const grpc = definedOnly({
    limits: Object.keys(limits).length > 0 ? limits : undefined,
    maxStreams: whole(values['grpc-max-streams'], 'grpc-max-streams', 'streams'),
    watchLimits: Object.keys(watchLimits).length > 0 ? watchLimits : undefined,
  });
  if (Object.keys(grpc).length > 0) options.grpc = { ...options.grpc, ...grpc };
  const gatewayLimits = definedOnly({
    requestTimeoutMs: duration(values['gateway-request-timeout'], 'gateway-request-timeout'),
    headersTimeoutMs: duration(values['gateway-headers-timeout'], 'gateway-headers-timeout'),
    idleTimeoutMs: duration(values['gateway-idle-timeout'], 'gateway-idle-timeout'),
    upstreamTimeoutMs: duration(values['upstream-timeout'], 'upstream-timeout'),
    maxClientInFlight: whole(values['gateway-max-client-inflight'], 'gateway-max-client-inflight', 'requests'),
    maxUpstreamSockets: whole(values['upstream-max-sockets'], 'upstream-max-sockets', 'sockets'),
  });
  const subnet = whole(values['ipv6-subnet'], 'ipv6-subnet', 'bits');
  if (subnet !== undefined && subnet > 128) throw new LimitFlagError('--ipv6-subnet: a prefix length from 1 to 128');
  const gateway = definedOnly({
    limits: Object.keys(gatewayLimits).length > 0 ? gatewayLimits : undefined,
    ipv6Subnet: subnet,
  });
  if (Object.keys(gateway).length === 0) return;
  // The gateway's flags without a gateway are a mistake worth saying (they would do nothing).
  if (options.gateway === undefined) {
    throw new LimitFlagError(
      `--${Object.keys(values).find(isGatewayFlag)}: applies to the gateway; give --upstream too`,
    );
  }
  options.gateway = { ...options.gateway, ...gateway };
}

function isGatewayFlag(flag: string): boolean {
  return flag.startsWith('gateway-') || flag.startsWith('upstream-') || flag === 'ipv6-subnet';
}

function definedOnly<T extends object>(value: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as never;
}
