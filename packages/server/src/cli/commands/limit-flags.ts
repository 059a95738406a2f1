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
`;

/** parseArgs specs of the limit flags. */
export const LIMIT_FLAGS = {
  'grpc-max-message': { type: 'string' },
  'grpc-connection-buffer': { type: 'string' },
  'grpc-total-buffer': { type: 'string' },
  'grpc-message-timeout': { type: 'string' },
  'grpc-max-streams': { type: 'string' },
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
  const grpc = {
    maxMessageBytes: whole(values['grpc-max-message'], 'grpc-max-message', 'bytes'),
    maxConnectionBufferBytes: whole(values['grpc-connection-buffer'], 'grpc-connection-buffer', 'bytes'),
    maxTotalBufferBytes: whole(values['grpc-total-buffer'], 'grpc-total-buffer', 'bytes'),
    messageTimeoutMs: duration(values['grpc-message-timeout'], 'grpc-message-timeout'),
  };
  const given = Object.fromEntries(Object.entries(grpc).filter(([, v]) => v !== undefined));
  if (Object.keys(given).length > 0) options.grpcLimits = given;
  const streams = whole(values['grpc-max-streams'], 'grpc-max-streams', 'streams');
  if (streams !== undefined) options.grpcMaxStreams = streams;
}
