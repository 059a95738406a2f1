/**
 * A permit of an adaptive limiter: holds one place of the priority book until released exactly once,
 * and turns its release into a latency sample.
 */
import type { Clock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import type { AdaptivePermit } from './decision.js';
import type { LimitSample } from './limit-algorithm.js';
import type { PriorityBook } from './priority-book.js';

const OUTCOMES = new Set<unknown>(['success', 'dropped', 'ignore']);

/** Takes a place for priority `i` in `book`; `onRelease` gets the sample (undefined for `ignore`). */
export function takePermit(
  book: PriorityBook,
  i: number,
  clock: Clock,
  onRelease: (sample: LimitSample | undefined) => void,
): AdaptivePermit {
  book.admitted[i] = (book.admitted[i] as number) + 1;
  book.inFlight[i] = (book.inFlight[i] as number) + 1;
  const inFlight = ++book.total;
  const startMs = clock.now();
  let released = false;
  return {
    allowed: true,
    priority: book.names[i] as string,
    release(outcome = 'success') {
      if (!OUTCOMES.has(outcome))
        throw new SluiceError(
          'ERR_SLUICE_ADAPTIVE_INVALID_OUTCOME',
          `release('${String(outcome)}'): give 'success', 'dropped' (overload: timeout, 5xx) or 'ignore'`,
        );
      if (released)
        throw new SluiceError(
          'ERR_SLUICE_ADAPTIVE_ALREADY_RELEASED',
          'this permit was already released; release each permit exactly once (e.g. in a finally block)',
        );
      released = true;
      book.inFlight[i] = (book.inFlight[i] as number) - 1;
      book.total--;
      const atMs = clock.now();
      onRelease(
        outcome === 'ignore' ? undefined : { rttMs: atMs - startMs, inFlight, dropped: outcome === 'dropped', atMs },
      );
    },
  };
}
