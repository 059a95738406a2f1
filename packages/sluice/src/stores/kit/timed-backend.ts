/**
 * A state backend's calls bounded in time: an update past `timeoutMs` fails with ERR_SLUICE_STORE_TIMEOUT
 * (the limiter's failure policy answers), any other failure of the database is ERR_SLUICE_STORE_UNAVAILABLE.
 */
import { SluiceError } from '../../core/errors.js';
import type { StateBackend } from './state-backend.js';

/** The kit store's counters that the timed calls keep. */
export interface TimedStats {
  decisions: number;
  timeouts: number;
}

/** `backend.update` within `timeoutMs`, refused once `isClosed()`. */
export function timedUpdate(backend: StateBackend, timeoutMs: number, stats: TimedStats, isClosed: () => boolean) {
  return <T>(ids: string[], nowMs: number, step: Parameters<StateBackend['update']>[2]): Promise<T> => {
    if (isClosed()) {
      return Promise.reject(new SluiceError('ERR_SLUICE_STORE_CLOSED', `the ${backend.name} store was closed`));
    }
    stats.decisions++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        stats.timeouts++;
        reject(
          new SluiceError(
            'ERR_SLUICE_STORE_TIMEOUT',
            `${backend.name} did not answer within ${timeoutMs} ms; raise timeoutMs or look at the database's load`,
          ),
        );
      }, timeoutMs);
      backend.update(ids, nowMs, step as never).then(
        (result) => {
          clearTimeout(timer);
          resolve(result as T);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(unavailable(backend.name, error));
        },
      );
    });
  };
}

/** Waits for `backend.ready()` at most `waitMs` (ERR_SLUICE_STORE_TIMEOUT after). */
export async function readyWithin(backend: StateBackend, waitMs: number): Promise<void> {
  if (backend.ready === undefined) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new SluiceError(
            'ERR_SLUICE_STORE_TIMEOUT',
            `${backend.name} was not ready within ${waitMs} ms; check the connection settings`,
          ),
        ),
      waitMs,
    );
  });
  try {
    await Promise.race([backend.ready(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function unavailable(name: string, error: unknown): SluiceError {
  if (error instanceof SluiceError) return error;
  return new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `${name}: ${(error as Error)?.message ?? String(error)}`, {
    cause: error,
  });
}
