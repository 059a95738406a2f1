/**
 * The ports the service's listeners ask for, checked before any binds, and a bind failure turned into an
 * error that names the port and the setting that chose it.
 */
import { SluiceError } from 'sluice';

/** One listener's address, and the flag and environment variable that set it (for the messages). */
export interface PortRequest {
  /** What listens there, e.g. 'the HTTP API'. */
  readonly what: string;
  /** Where its port comes from, e.g. '--port or PORT'. */
  readonly setting: string;
  readonly host: string;
  /** 0: any free port, never in conflict. */
  readonly port: number;
}

/** The settings of each listener, as `sluice serve` reads them (flags win over the environment). */
export const PORT_SETTINGS = {
  http: { what: 'the HTTP API', setting: '--port or PORT' },
  grpc: { what: 'gRPC', setting: '--grpc-port or GRPC_PORT' },
  metrics: { what: 'the metrics listener', setting: 'PROMETHEUS_ADDR' },
  gateway: { what: 'the gateway', setting: '--proxy-port or PROXY_PORT' },
} as const;

/**
 * Throws ERR_SLUICE_PORT_CONFLICT when two listeners ask for the same port on overlapping hosts: the
 * second bind would fail with EADDRINUSE after the first had started, naming neither setting.
 */
export function checkDistinctPorts(requests: readonly PortRequest[]): void {
  for (const [i, a] of requests.entries()) {
    if (a.port === 0) continue;
    const b = requests.slice(i + 1).find((other) => other.port === a.port && overlap(a.host, other.host));
    if (b === undefined) continue;
    throw new SluiceError(
      'ERR_SLUICE_PORT_CONFLICT',
      `${a.what} (${a.setting}) and ${b.what} (${b.setting}) are both given port ${a.port}: give each its own port`,
    );
  }
}

const ANY_HOST = new Set(['', '0.0.0.0', '::', '[::]']);

/** Two hosts share their ports when they are the same or either is every interface. */
function overlap(a: string, b: string): boolean {
  return a === b || ANY_HOST.has(a) || ANY_HOST.has(b);
}

/**
 * Runs `bind`; a port already in use becomes ERR_SLUICE_PORT_IN_USE naming the port and its setting
 * (Node's error says only `listen EADDRINUSE`, grpc-js's `No address added out of total 1 resolved`).
 */
export async function bindNamed<T>(request: PortRequest, bind: () => Promise<T>): Promise<T> {
  try {
    return await bind();
  } catch (error) {
    if (!isAddressInUse(error)) throw error;
    throw new SluiceError(
      'ERR_SLUICE_PORT_IN_USE',
      `${request.what} cannot listen on ${request.host}:${request.port}: the port is already in use (set by ${request.setting}); stop what listens there or choose another port`,
      { cause: error },
    );
  }
}

/** Node's listen error has the code; grpc-js folds it into its message. */
function isAddressInUse(error: unknown): boolean {
  return (
    (error as { code?: unknown } | undefined)?.code === 'EADDRINUSE' ||
    (error instanceof Error && error.message.includes('EADDRINUSE'))
  );
}
