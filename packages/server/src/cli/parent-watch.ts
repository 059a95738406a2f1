/**
 * Notices that the process that started `sluice serve` through npm (`npx sluice serve`, `npm start`) is
 * gone, so the service stops with it instead of running on unseen.
 */

/** How often the parent is looked at: a stopped `npx` is noticed within this. */
const INTERVAL_MS = 500;

/**
 * Calls `onGone` once when this process's parent exits, if npm started it. npm 11's `exec` does not pass
 * SIGTERM on to the command it runs, so killing `npx sluice serve` would otherwise leave the service
 * running, adopted by init. Only under npm (`npm_command` in the environment): a service started by a
 * shell and left running on purpose (`nohup sluice serve &`) outlives the shell, as it should.
 *
 * @returns a function that stops watching.
 */
export function watchParent(onGone: () => void, env: NodeJS.ProcessEnv = process.env): () => void {
  const parent = process.ppid;
  // Already adopted (or started by init): there is no parent to outlive.
  if (env.npm_command === undefined || parent <= 1) return () => {};
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, INTERVAL_MS);
  // Never what keeps the process alive.
  timer.unref();
  return () => clearInterval(timer);
}
