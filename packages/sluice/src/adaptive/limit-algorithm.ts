/**
 * The contract every adaptive limit algorithm meets: it sees one measured request at a time and
 * answers the concurrency limit it now believes the protected service can take. Also the two
 * readings of a window the built-in algorithms share: whether the limit was in use, and its
 * no-load latency.
 */

/** One finished request, as the algorithm sees it. */
export interface LimitSample {
  /** How long the request was in flight, in milliseconds. */
  rttMs: number;
  /** Requests in flight when it started, itself included. */
  inFlight: number;
  /** True when the caller attributed the outcome to overload (timeout, 5xx, shed downstream). */
  dropped: boolean;
  /** When it finished, on the limiter's clock (ms). */
  atMs: number;
  /**
   * In a window's summary: the fastest request of the window that was not dropped (its `rttMs` is the
   * window's average). The no-load latency is a fastest request's, not an average's: an average taken
   * while the limit already holds a queue includes that queue.
   */
  minRttMs?: number;
  /**
   * In a window's summary: some request was refused (or had to wait) for want of a place during the
   * window, so the limit is in use even when fewer than half its places are held — as when part of
   * it is kept for a priority with demand that uses less than its share.
   */
  limited?: boolean;
}

/**
 * Whether the limit was in use during a window: half its places held, or a request refused or queued.
 * Only then may it grow: an idle service proves nothing about what it can take.
 */
export const inUse = (sample: LimitSample, limit: number) => sample.limited === true || sample.inFlight * 2 >= limit;

/** A window's no-load latency: its fastest request (never 0: algorithms divide by it). */
export const fastestMs = (sample: LimitSample) => Math.max(sample.minRttMs ?? sample.rttMs, 0.001);

/** An adaptive limit algorithm: a step from the current limit and one sample to the next limit. */
export interface LimitAlgorithm {
  /** Feeds one sample; answers the new limit (a real number; the limiter clamps and floors it). */
  update(limit: number, sample: LimitSample): number;
}

/** Names of the built-in algorithms. */
export type AdaptiveAlgorithmName = 'gradient2' | 'vegas' | 'aimd';
