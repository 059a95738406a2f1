/**
 * Every decision the service takes is published here, once per descriptor (or /v1/check item), so that
 * metrics, logs and an in-process stats collector (the dashboard's "decisions per second per rule" and
 * "top keys") can watch without the request paths knowing about them.
 */

/** The domain of events whose request named a domain the rules do not have. */
export const UNKNOWN_DOMAIN = '_unknown';

/** How one decision ended. The four outcomes are exclusive: their sum is every decision. */
export type DecisionOutcome = 'ok' | 'near_limit' | 'over_limit' | 'shadow';

/** Where a decision was asked for. */
export type DecisionSource = 'grpc' | 'json' | 'check' | 'gateway';

/** One decision, as published to listeners. */
export interface DecisionEvent {
  readonly source: DecisionSource;
  /**
   * The request's domain; {@link UNKNOWN_DOMAIN} for a domain the rules do not have (a client may send any
   * string there, and listeners label and key by it); `''` for `/v1/check` items, which have none.
   */
  readonly domain: string;
  /** The matched rule's id (domain + descriptor path), the `/v1/check` policy id, or `''` when no rule applied. */
  readonly rule: string;
  /** The key counted: the descriptor's entries as `k=v/k=v`, or the `/v1/check` key. */
  readonly key: string;
  readonly outcome: DecisionOutcome;
  /** The limit that decided, when one applied. */
  readonly limit?: number;
  readonly remaining?: number;
  readonly resetMs?: number;
  /** Set when an allow or deny list entry answered instead of a limit. */
  readonly list?: 'allow' | 'deny';
  /**
   * envoy ratelimit's stats key (`domain.key_value.key2`) when the rule's `detailed_metric` or
   * `value_to_metric` asks for a series per value.
   */
  readonly metricKey?: string;
  /** When the decision was taken (ms since the epoch). */
  readonly atMs: number;
}

/** A function that receives decisions. It must be fast and must not throw: it runs on the request path. */
export type DecisionListener = (event: DecisionEvent) => void;

/** Fan-out of decision events to listeners. */
export interface DecisionHub {
  /** Adds a listener; the returned function removes it. */
  subscribe(listener: DecisionListener): () => void;
  emit(event: DecisionEvent): void;
  /** True when at least one listener is subscribed (lets callers skip building events nobody reads). */
  readonly active: boolean;
}

/** Creates an empty hub. */
export function createDecisionHub(): DecisionHub {
  let listeners: readonly DecisionListener[] = [];
  return {
    subscribe(listener) {
      listeners = [...listeners, listener];
      return () => {
        listeners = listeners.filter((l) => l !== listener);
      };
    },
    emit(event) {
      for (const listener of listeners) {
        try {
          listener(event);
        } catch {
          // A broken listener must not fail the request that produced the event.
        }
      }
    },
    get active() {
      return listeners.length > 0;
    },
  };
}

/** Share of the limit used above which an allowed decision counts as `near_limit` (envoy ratelimit's 0.8). */
export const NEAR_LIMIT_RATIO = 0.8;

/**
 * The outcome of an allowed or rejected decision against `limit` with `remaining` left: `near_limit` once
 * more than `floor(limit × ratio)` is used, as envoy ratelimit's NEAR_LIMIT_RATIO threshold.
 */
export function outcomeOf(
  allowed: boolean,
  limit: number | undefined,
  remaining: number | undefined,
  ratio: number = NEAR_LIMIT_RATIO,
): DecisionOutcome {
  if (!allowed) return 'over_limit';
  if (limit === undefined || remaining === undefined || !Number.isFinite(limit) || limit <= 0) return 'ok';
  return limit - remaining > Math.floor(limit * ratio) ? 'near_limit' : 'ok';
}
