/**
 * The rules engine's public types: Envoy's rate-limit request and response (a domain, its descriptors, a status per
 * descriptor), the engine's options and the engine itself.
 */
import type { Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import type { AlgorithmName } from '../core/policy.js';
import type { LimiterDecision } from '../limiter/limiter-decision.js';
import type { Store } from '../stores/store.js';
import type { RuleHttpRequest } from './http/types.js';
import type { DescriptorPathEntry, FailMode, RuleSet, Unit } from './types.js';

/** One `key`/`value` pair of a request descriptor. */
export interface DescriptorEntry {
  key: string;
  value: string;
}

/** A limit sent with a request descriptor; it replaces whatever the config says (envoy's `limit` override). */
export interface LimitOverride {
  requestsPerUnit: number;
  /** A unit, in any case (`'MINUTE'`, `'minute'`). */
  unit: Unit | Lowercase<Unit>;
}

/** One descriptor of a request: an ordered list of entries, as Envoy sends them. */
export interface RequestDescriptor {
  entries: DescriptorEntry[];
  /** Use this limit instead of the config's (the domain must still be configured, as in envoy ratelimit). */
  limit?: LimitOverride;
  /** Hits this descriptor takes; 0 checks without counting. @default the request's hitsAddend */
  hitsAddend?: number;
}

/** A rate-limit request: Envoy's `RateLimitRequest`. */
export interface RateLimitRequest {
  domain: string;
  descriptors: RequestDescriptor[];
  /** Hits every descriptor takes unless it says otherwise; 0 counts as 1 (as in Envoy). @default 1 */
  hitsAddend?: number;
}

/** The limit a status was decided by. */
export interface CurrentLimit {
  name?: string;
  /**
   * Requests per `unit`. For a `period` that is not exactly one unit, the same rate expressed in the
   * smallest unit that gives at least one request (Envoy's proto only knows units); `periodMs` and
   * `limit` give the exact policy.
   */
  requestsPerUnit: number;
  unit: Unit;
  /** The exact policy: `limit` requests per `periodMs`. */
  limit: number;
  periodMs: number;
  algorithm: AlgorithmName;
  /** The bucket's capacity when the rule gives one (`burst`; bucket algorithms): what `limitRemaining` counts down from. */
  burst?: number;
}

/** The answer for one descriptor of a request. */
export interface DescriptorStatus {
  code: 'OK' | 'OVER_LIMIT';
  /** The limit that decided; absent when no limit applies (no rule, allow-listed, unlimited, replaced). */
  currentLimit?: CurrentLimit;
  /** Requests left; 0 with no limit, 4294967295 for `unlimited`. */
  limitRemaining: number;
  /** Time until the limit's window resets (fixed windows) or the bucket is full again; 0 with no limit. */
  durationUntilResetMs: number;
  /** True when a shadow-mode rule would have rejected this descriptor (the answer is OK anyway). */
  shadow?: boolean;
  /** `name` of the deciding limit, when it has one. */
  ruleName?: string;
  /** Identity of the matched rule (domain + descriptor path), for metrics and logs. */
  ruleId?: string;
  /** The matched rule asks for metrics per full descriptor value (`detailed_metric: true`). */
  detailedMetric?: boolean;
  /**
   * envoy ratelimit's stats key of this descriptor (`domain.key_value.key2`), when the matched rule's
   * `detailed_metric` or `value_to_metric` makes it depend on the request's values.
   */
  metricKey?: string;
  /** The descriptor is in quota mode (`quota_mode: true`, or the engine's `quota`). */
  quota?: boolean;
  /** The matched rule's `metadata`. */
  metadata?: Readonly<Record<string, unknown>>;
  /** The underlying decision (combined over the rule's limits), when a limit applied. */
  decision?: Decision;
}

/** The answer to a request: the worst code, and one status per descriptor in request order. */
export interface RateLimitResponse {
  overallCode: 'OK' | 'OVER_LIMIT';
  statuses: DescriptorStatus[];
  /** True when the engine's global `shadow` turned an OVER_LIMIT answer into OK. */
  shadowed?: boolean;
}

/** An HTTP request to decide by rules, and the hits it takes. */
export interface HttpCheckRequest extends RuleHttpRequest {
  /** Hits every descriptor takes unless its `http:` item says otherwise; 0 counts as 1 (as in Envoy). @default 1 */
  hitsAddend?: number;
}

/** What the rules said about an HTTP request. */
export interface HttpRulesVerdict {
  /**
   * The enforced rules' decisions combined: rejected if any rule rejected, else the one closest to exhaustion;
   * each rule's own in `results`. Allowed with no limit when only shadow-mode rules applied.
   */
  readonly decision: LimiterDecision;
  /** The name of the rule that decided (its limit's name, else its id); `''` when only shadow-mode rules applied. */
  readonly limitName: string;
  /** The limit of the rule that decided, which response headers describe; undefined when only shadow-mode rules applied. */
  readonly limit: CurrentLimit | undefined;
  /** Statuses a shadow-mode rule would have rejected (the request passes anyway). */
  readonly shadowed: readonly DescriptorStatus[];
}

/** Options of `createRulesEngine`. */
export interface RulesEngineOptions {
  ruleSet: RuleSet;
  /** Where counters live. @default a new memory store */
  store?: Store;
  /** @default the system clock */
  clock?: Clock;
  /**
   * What to do when the store fails, for rules that say nothing (`fail:` in a rule or file wins).
   * @default undefined: the store's error is thrown (the service answers UNAVAILABLE, as envoy ratelimit does)
   */
  fail?: FailMode;
  /**
   * With `fail: 'insurance'`, the fraction of each limit the in-memory stand-in allows (e.g. `0.25` when
   * four processes share the limit). @default 1
   */
  insuranceShare?: number;
  /**
   * envoy ratelimit's global `SHADOW_MODE`: decide as usual (statuses keep OVER_LIMIT, a rejected request
   * consumes nothing) but answer `overallCode: 'OK'`, with `shadowed: true`. @default false
   */
  shadow?: boolean;
  /**
   * envoy ratelimit's global `QUOTA_MODE`: every descriptor is in quota mode — the request is OVER_LIMIT
   * only when all of them are. @default false
   */
  quota?: boolean;
}

/** One limit of a rule, for a dashboard. */
export interface LimitDescription {
  name?: string;
  requestsPerUnit: number;
  unit?: Unit;
  periodMs: number;
  algorithm: AlgorithmName;
  burst?: number;
  replaces: string[];
}

/** One rule (a descriptor with a limit, unlimited, or allow-listed), for a dashboard. */
export interface RuleDescription {
  id: string;
  domain: string;
  /** The descriptor path, e.g. `remote_address/path=/login`. */
  descriptor: string;
  path: DescriptorPathEntry[];
  limits: LimitDescription[];
  unlimited: boolean;
  /** A key/value with no limit and no children: requests matching it are never limited. */
  allowListed: boolean;
  shadow: boolean;
  /** The first limit's name, if any. */
  name?: string;
  fail?: FailMode;
  detailedMetric: boolean;
  shareThreshold: boolean;
  file: string;
  line: number;
}

/** Decides requests against a RuleSet. */
export interface RulesEngine {
  /** Decides a request; a rejected request consumes from none of its descriptors. */
  shouldRateLimit(request: RateLimitRequest): Promise<RateLimitResponse>;
  /**
   * {@link RulesEngine.shouldRateLimit} with no promise when the store answers at once (the memory store
   * does): the response itself, or a promise of it when the store is remote; it throws what
   * `shouldRateLimit` would reject with. For a server's hot path, where a promise and a microtask per
   * decision show. Engines from `createRulesEngine` have it.
   */
  decide?(request: RateLimitRequest): RateLimitResponse | Promise<RateLimitResponse>;
  /**
   * Decides an HTTP request: the `http:` section of each domain turns it into descriptors (Envoy's route actions),
   * each domain is decided as by {@link RulesEngine.shouldRateLimit}, and the enforced rules' answers are combined
   * (rejected if any rejected, else the one closest to exhaustion). Undefined when no rule applies. The middleware's
   * `rules` option decides each request with it.
   */
  checkHttp(request: HttpCheckRequest): Promise<HttpRulesVerdict | undefined>;
  /**
   * Forgets the counters behind a request's descriptors (every limit each one matches, `replaces`
   * ignored), e.g. for an admin "reset this key". Hits and shadow mode play no part.
   */
  reset(request: RateLimitRequest): Promise<void>;
  /** Swaps the rules in place. Counters of rules that did not change keep counting. */
  setRuleSet(ruleSet: RuleSet): void;
  /** The rules in use. */
  readonly ruleSet: RuleSet;
  readonly store: Store;
  /** Every rule of the current RuleSet, for dashboards. */
  describeRules(): RuleDescription[];
  /** Closes the memory store the engine created when given none; a store passed in is the caller's to close. */
  close(): Promise<void>;
}
