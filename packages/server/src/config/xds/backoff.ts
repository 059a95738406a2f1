/** How long to wait between reconnects to the xDS management server (envoy's XDS_CLIENT_BACKOFF_* settings). */
export interface XdsBackoff {
  /** The first wait, and the shortest. */
  readonly initialMs: number;
  /** The longest wait. */
  readonly maxMs: number;
  /** Each wait is the last one times this (envoy's XDS_CLIENT_BACKOFF_RANDOM_FACTOR; ≤ 0 means 2). */
  readonly factor: number;
  /** Pick each wait at random between the initial wait and the computed one. */
  readonly jitter: boolean;
}

/**
 * The wait before reconnect number `attempt` (0 first), as the backoff envoy ratelimit uses
 * (jpillora/backoff) computes it: `initial × factor^attempt`, with jitter a uniform pick between `initial`
 * and that, kept within [initial, max]. envoy's defaults (10s, 60s, factor 0.5) make every wait 10 s: a
 * factor below 1 never grows the wait.
 */
export function backoffDelay(backoff: XdsBackoff, attempt: number, random: () => number = Math.random): number {
  const min = backoff.initialMs > 0 ? backoff.initialMs : 100;
  const max = backoff.maxMs > 0 ? backoff.maxMs : 10_000;
  if (min >= max) return max;
  const factor = backoff.factor > 0 ? backoff.factor : 2;
  let wait = min * factor ** attempt;
  if (backoff.jitter) wait = random() * (wait - min) + min;
  if (!Number.isFinite(wait)) return max;
  return Math.round(Math.min(max, Math.max(min, wait)));
}
