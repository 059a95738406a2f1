/** What `acquire` answers: a permit to release when the work ends, or a rejection (a value, not an error). */

/** How the work behind a permit ended. `dropped`: overload (timeout, 5xx); `ignore`: do not measure it. */
export type ReleaseOutcome = 'success' | 'dropped' | 'ignore';

/** A place in the limit, held until `release` is called exactly once. */
export interface AdaptivePermit {
  readonly allowed: true;
  /** The priority it was taken for. */
  readonly priority: string;
  /**
   * Gives the place back and feeds the latency since it was granted to the algorithm.
   * @param outcome `'success'` (default), `'dropped'` when the caller attributes the failure to
   * overload, `'ignore'` to give the place back without a measurement (a cancelled request).
   * @throws ERR_SLUICE_ADAPTIVE_ALREADY_RELEASED on a second call, ERR_SLUICE_ADAPTIVE_INVALID_OUTCOME.
   */
  release(outcome?: ReleaseOutcome): void;
}

/** Why a request was refused. */
export type AdaptiveRejectReason = 'limit' | 'queue-full' | 'queue-timeout' | 'aborted';

/** A refused request: the service is at its current limit for this priority. */
export interface AdaptiveRejection {
  readonly allowed: false;
  readonly priority: string;
  readonly reason: AdaptiveRejectReason;
  /** The limit when it was refused. */
  readonly limit: number;
  /** Requests in flight when it was refused. */
  readonly inFlight: number;
  /** A hint for `Retry-After`: overload is the server's state, so a short while. */
  readonly retryAfterMs: number;
}

/** The answer of `acquire`. */
export type AdaptiveDecision = AdaptivePermit | AdaptiveRejection;

/** Per-priority figures. */
export interface PriorityFigures {
  share: number;
  /** Places guaranteed under the current limit. */
  guaranteed: number;
  inFlight: number;
  queued: number;
  /** Requests admitted since the limiter was created. */
  admitted: number;
  /** Requests refused (shed) since the limiter was created. */
  shed: number;
}

/** A snapshot of the limiter, for metrics and dashboards. */
export interface AdaptiveStats {
  algorithm: string;
  limit: number;
  inFlight: number;
  queued: number;
  priorities: Record<string, PriorityFigures>;
}
