/**
 * Exponential backoff with full jitter: a uniformly random wait in `[0, min(maxDelayMs, baseDelayMs ×
 * 2^retry))`. The randomness spreads clients that failed together so they do not retry together; the
 * cap keeps one wait bounded (see the AWS Architecture Blog, "Exponential Backoff And Jitter").
 *
 * @param retry - 0 for the first retry, 1 for the second, …
 * @param random - a source of numbers in [0, 1) (injected in tests).
 * @example fullJitterBackoff(2, 100, 10_000, Math.random) // somewhere in [0, 400)
 */
export function fullJitterBackoff(
  retry: number,
  baseDelayMs: number,
  maxDelayMs: number,
  random: () => number,
): number {
  // 2 ** retry overflows to Infinity for huge retry counts; min() keeps the cap.
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** retry);
  return Math.floor(random() * ceiling);
}
