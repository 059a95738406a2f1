/** Keeps grpc-js's own line about a failed bind off stderr. */
import { setLogger } from '@grpc/grpc-js';

/**
 * Gives grpc-js (process-wide) a logger like its default one, less the line it prints when a bind fails:
 * `E No address added out of total N resolved`. The bind's error reaches the service, which reports it as
 * ERR_SLUICE_PORT_IN_USE naming the port and its setting, so that line only repeated it without them.
 * For `sluice serve`, which owns its process; the library leaves grpc-js's logger alone.
 */
export function quietGrpcBindFailure(): void {
  setLogger({
    error: (message?: unknown, ...rest: unknown[]) => {
      if (typeof message === 'string' && message.startsWith('No address added out of total')) return;
      console.error(`E ${message}`, ...rest);
    },
    info: (message?: unknown, ...rest: unknown[]) => console.error(`I ${message}`, ...rest),
    debug: (message?: unknown, ...rest: unknown[]) => console.error(`D ${message}`, ...rest),
  });
}
