/** What a limiter answers: the combined decision and, for a multi-limit limiter, each limit's own. */
import type { Decision } from '../core/decision.js';

/** How one limit of a multi-limit check decided. */
export interface LimitResult {
  readonly name: string;
  readonly key: string;
  readonly decision: Decision;
}

/** A limiter's answer: the combined decision, plus each limit's own when the limiter has several. */
export interface LimiterDecision extends Decision {
  /** Each applied limit's decision (limiters created with `limits: [...]` only). */
  results?: LimitResult[];
}
