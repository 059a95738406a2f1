/**
 * Client-side pacing: callers queue, first come first served, for send slots handed out by the server's own
 * token-bucket step, so a client paced at the server's rate is never refused for going too fast.
 */
import { tokenBucket } from '../algorithms/token-bucket.js';
import type { Clock } from '../core/clock.js';
import type { ResolvedPolicy } from '../core/policy.js';
import { abortable, type Sleep } from './sleep.js';

/** Hands out send slots no faster than a token bucket allows, first come first served. */
export interface Pacer {
  /** Resolves when this request may be sent; rejects at once if `signal` aborts while waiting. */
  take(signal?: AbortSignal): Promise<void>;
}

/**
 * Creates a pacer over the core's token-bucket step (the same integer arithmetic as the server side,
 * so a client paced at the server's rate and burst is never refused for going too fast).
 *
 * Callers queue in order: each waits for the one before it, then for a token. An aborted caller leaves
 * the queue at once and takes no token.
 */
export function createPacer(policy: ResolvedPolicy, clock: Clock, sleep: Sleep): Pacer {
  const state = new Float64Array(3);
  let tail: Promise<void> = Promise.resolve();

  async function nextToken(signal: AbortSignal | undefined): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const decision = tokenBucket.check(state, 0, clock.now(), policy, 1, true);
      if (decision.allowed) return;
      await abortable(sleep(decision.retryAfterMs, signal), signal);
    }
  }

  return {
    take(signal) {
      const turn = tail.then(() => nextToken(signal));
      // The next caller waits for this one's turn to end, however it ends.
      tail = turn.catch(() => {});
      return abortable(turn, signal);
    },
  };
}
