/** The service's logger: pino, one JSON object per line, with sluice's levels. */
import { pino } from 'pino';

/** The service's structured logger (pino: one JSON object per line). */
export type Logger = pino.Logger;

/** Log levels the service accepts, quietest last. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Creates the JSON logger the service writes to stdout. pino writes synchronously to fd 1 here, so the
 * last lines before an exit (the shutdown record) are never lost.
 * @default level 'info'
 */
export function createLogger(level: LogLevel = 'info', destination: number = 1): Logger {
  return pino(
    { name: 'sluice', level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ dest: destination, sync: true }),
  );
}
