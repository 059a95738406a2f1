/**
 * Runs async work one at a time: a call while it runs returns the run in progress and asks for one more run after
 * it, so the last call's request is always seen and calls never pile up.
 */

/** `work` wrapped so that overlapping calls coalesce; `stopped()` true ends the extra runs. */
export function coalescedRun(work: () => Promise<void>, stopped: () => boolean): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again = false;
  return () => {
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await work();
      } while (again && !stopped());
    })().finally(() => {
      running = undefined;
    });
    return running;
  };
}
