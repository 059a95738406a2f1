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
   * In a window's summary: a low percentile (the 10th) of the latencies of the window's requests that
   * were not dropped (its `rttMs` is the window's average). The no-load latency is read from the
   * window's fast requests, not its average: an average taken while the limit already holds a queue
   * includes that queue. Not from its single fastest either, which one request of a faster route sets.
   */
  lowRttMs?: number;
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

/**
 * A latency as the algorithms compare it: at least 1 ms. The clock counts whole milliseconds, so 0 is
 * "under 1 ms", and 0 against 1 ms is rounding, not a queue; the algorithms also divide by it.
 */
export const measuredMs = (rttMs: number) => Math.max(rttMs, 1);

/** A window's reading of the no-load latency: its low percentile (see `lowRttMs`). */
export const lowMs = (sample: LimitSample) => measuredMs(sample.lowRttMs ?? sample.rttMs);

/** An adaptive limit algorithm: a step from the current limit and one sample to the next limit. */
export interface LimitAlgorithm {
  /** Feeds one sample; answers the new limit (a real number; the limiter clamps and floors it). */
  update(limit: number, sample: LimitSample): number;
}

/** Names of the built-in algorithms. */
export type AdaptiveAlgorithmName = 'gradient2' | 'vegas' | 'aimd';
