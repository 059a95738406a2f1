/** A warning logged at most once a minute: a dead collector must not flood the service's log. */
import type { Logger } from '../logger.js';

/** A `warn` that drops calls within a minute of the last one it logged. */
export function throttled(logger: Logger | undefined): (fields: Record<string, unknown>, message: string) => void {
  let lastMs = Number.NEGATIVE_INFINITY;
  return (fields, message) => {
    const now = Date.now();
    if (now - lastMs < 60_000) return;
    lastMs = now;
    logger?.warn(fields, message);
  };
}
