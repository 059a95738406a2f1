/**
 * The validated form of rules: the descriptor tree of each domain, its limits, and the issues reported while loading;
 * what a rules engine decides with.
 */
import type { AlgorithmName, ResolvedPolicy } from '../core/policy.js';
import type { PathFolding } from './http/normalize-path.js';
import type { HttpRateLimit } from './http/types.js';
import type { MetricLevel } from './metric-key.js';

/**
 * A unit of envoy ratelimit's `rate_limit.unit`, spelled as the Envoy proto enum names it (the gRPC
 * layer passes these straight through). Config files may write them in any case (`minute`).
 */
export type Unit = 'SECOND' | 'MINUTE' | 'HOUR' | 'DAY' | 'WEEK' | 'MONTH' | 'YEAR';

/** How a rule behaves when its store fails: the limiter's failure modes, one name in every layer. */
import type { FailMode } from '../core/fail-mode.js';

export type { FailMode };

/** One problem found while loading rules. Every problem in every file is reported at once. */
export interface RuleIssue {
  /** Stable code, one per kind of problem (`ERR_SLUICE_RULES_*`, see `RULE_ISSUE_CODES`). */
  code: string;
  /** What is wrong and what to do, naming the field at fault. */
  message: string;
  /** The file the problem is in (as given to `loadRules`/`parseRules`). */
  file: string;
  /** 1-based line; 0 when the problem concerns the whole file (e.g. it cannot be read). */
  line: number;
  /** 1-based column; 0 when the problem concerns the whole file. */
  column: number;
}

/** One limit of a rule, validated. A rule has one (`rate_limit`) or several (`rate_limits`). */
export interface RuleLimit {
  /** `name` from the config, used by `replaces` and reported in statuses. */
  readonly name?: string;
  /** Requests allowed per period (`requests_per_unit`). 0 blocks every request. */
  readonly requestsPerUnit: number;
  /** The envoy unit, when the limit was given with `unit` (or its period is exactly one unit). */
  readonly unit?: Unit;
  /** The period in ms (from `unit` or `period`). */
  readonly periodMs: number;
  readonly algorithm: AlgorithmName;
  /** Bucket capacity when given (`burst`). */
  readonly burst?: number;
  /** Names of limits this one replaces when both match one request (`replaces: [{name}]`). */
  readonly replaces: readonly string[];
  /** The policy counters are kept under; its `id` carries the rule's identity. */
  readonly policy: ResolvedPolicy;
  /** Stable identity of this limit across reloads (rule identity + limit slot). */
  readonly id: string;
}

/** One entry of a descriptor path: `key` with an optional `value` (which may hold `*` wildcards). */
export interface DescriptorPathEntry {
  readonly key: string;
  readonly value?: string;
}

/** A node of a domain's descriptor tree: one `descriptors:` item of the config. */
export interface DescriptorNode {
  readonly key: string;
  /** Exact value or wildcard pattern; absent for a bare key (matches any value). */
  readonly value?: string;
  /** Compiled pattern when `value` contains `*`. */
  readonly wildcard?: RegExp;
  /** The limits of this node; empty for no limit. */
  readonly limits: readonly RuleLimit[];
  /** `rate_limit.unlimited: true`. */
  readonly unlimited: boolean;
  /** Names this node's `rate_limit` replaces (also for unlimited limits, as in envoy ratelimit). */
  readonly replaces: readonly string[];
  /** `rate_limit.name` of an unlimited limit (so it can itself be replaced). */
  readonly unlimitedName?: string;
  readonly shadow: boolean;
  readonly detailedMetric: boolean;
  /** `value_to_metric`: the runtime value goes into this level's metric key (envoy ratelimit). */
  readonly valueToMetric: boolean;
  /** `quota_mode`: over its limit, this rule fails the request only when every quota rule of it does. */
  readonly quotaMode: boolean;
  /** `metadata`: returned in the response's dynamic metadata when the descriptor passes (envoy ratelimit). */
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** How each level from the root to this node builds the envoy stats key (see `metricKey`). */
  readonly metricLevels: readonly MetricLevel[];
  /** True when the stats key depends on the request's values (`detailed_metric` or `value_to_metric` on the path). */
  readonly dynamicMetric: boolean;
  /** Values matching this wildcard share one counter. */
  readonly shareThreshold: boolean;
  /** Failure policy, inherited from the nearest ancestor or the domain when not given here. */
  readonly fail?: FailMode;
  readonly children: DescriptorLevel;
  /** Path from the domain root to this node, inclusive. */
  readonly path: readonly DescriptorPathEntry[];
  /** Stable identity: domain plus path. Counters are kept under it, so unchanged rules keep counting. */
  readonly id: string;
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/** The children of one level of a descriptor tree, indexed for matching. */
export interface DescriptorLevel {
  /** key → value → node, for exact values. */
  readonly exact: ReadonlyMap<string, ReadonlyMap<string, DescriptorNode>>;
  /** Wildcard nodes, in config order (the first match wins, as in envoy ratelimit). */
  readonly wildcards: readonly DescriptorNode[];
  /** key → node with no value. */
  readonly bare: ReadonlyMap<string, DescriptorNode>;
  /** Every node of this level, in config order. */
  readonly all: readonly DescriptorNode[];
}

/** The rules of one domain (one file). */
export interface DomainRules {
  readonly domain: string;
  readonly file: string;
  /** Domain-wide failure policy (`fail:` at the top of the file). */
  readonly fail?: FailMode;
  readonly root: DescriptorLevel;
  /** The `http:` section's rate limits, if any. */
  readonly http: readonly HttpRateLimit[];
  /** How request paths are folded before the `http:` actions see them (`http.path_matching`). @default DEFAULT_PATH_FOLDING */
  readonly pathMatching?: PathFolding;
  /** The gateway's token budget (`llm:`), if any. */
  readonly llm?: LlmRules;
  /** `http.priorities`: which priority of the gateway's adaptive limit a route's requests take. */
  readonly priorityRoutes?: readonly PriorityRoute[];
  /** `http.adaptive.priorities`: the gateway's own priority names and shares (one file of a set at most). */
  readonly adaptivePriorities?: AdaptivePriorities;
}

/** The gateway adaptive limit's priorities as a rules file names them, most important first. */
export interface AdaptivePriorities {
  readonly priorities: readonly { readonly name: string; readonly share: number }[];
  readonly file: string;
  readonly line: number;
}

/** One `http.priorities` entry: requests whose path starts with `pathPrefix` (and of `method`, if given). */
export interface PriorityRoute {
  readonly pathPrefix: string;
  /** Upper-case; any method when absent. */
  readonly method?: string;
  /** One of the gateway's priorities: `http.adaptive.priorities`' names, or critical, normal, batch. */
  readonly priority: string;
  readonly file: string;
  readonly line: number;
}

/** A rule file's `llm:` section: the gateway's token budget per key. */
export interface LlmRules {
  /** Whose request and response bodies the gateway reads. */
  readonly provider: 'openai' | 'anthropic';
  /** The request header a key is taken from (lower case); it is hashed before it is counted or logged. */
  readonly keyHeader: string;
  /** Any subset of the four limits, each `{ limit, periodMs }`. */
  readonly limits: Readonly<
    Partial<Record<'requests' | 'inputTokens' | 'outputTokens' | 'totalTokens', { limit: number; periodMs: number }>>
  >;
}

/** A validated, immutable set of rules: what an engine decides with. Swap it with `setRuleSet`. */
export interface RuleSet {
  readonly domains: ReadonlyMap<string, DomainRules>;
  /** The files it was built from. */
  readonly files: readonly string[];
}

/** The result of loading or parsing rules: a RuleSet, or every problem found. */
export type LoadResult =
  | { ok: true; ruleSet: RuleSet; files: string[] }
  | { ok: false; issues: RuleIssue[]; files: string[] };

/** Options of `parseRules`, `loadRules` and `watchRules`. */
export interface ParseOptions {
  /**
   * Files declaring the same domain are merged (their top-level descriptors must not repeat), as envoy
   * ratelimit's `MERGE_DOMAIN_CONFIG=true` does. @default false: a domain lives in one file
   */
  mergeDomains?: boolean;
}

/** One source given to `parseRules`: a file name (for messages) and its text. */
export interface RuleSource {
  file: string;
  text: string;
}
