/** Waits `ms`; rejects with the signal's reason as soon as it aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** setTimeout's largest delay; longer waits are slept in pieces. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** The real sleep: a timer, cleared when the signal aborts. */
export const timerSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    let left = Math.max(0, ms);
    let timer: ReturnType<typeof setTimeout>;
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const arm = () => {
      const step = Math.min(left, MAX_TIMEOUT_MS);
      left -= step;
      timer = setTimeout(() => {
        if (left > 0) return arm();
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, step);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    arm();
  });

/**
 * Runs `wait` but settles the moment `signal` aborts, whatever `wait` does: an injected sleep that
 * ignores its signal still cannot hold an aborted request.
 */
export function abortable<T>(wait: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return wait;
  if (signal.aborted) {
    // The wait may still settle later; it must not become an unhandled rejection.
    wait.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    wait.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
