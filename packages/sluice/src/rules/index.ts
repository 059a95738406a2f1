/**
 * sluice/rules — envoyproxy/ratelimit-compatible rules (YAML or JSON) with sluice's extensions:
 * loading with every problem reported at once, an engine that decides `(domain, descriptors, hits)`,
 * hot reload, and the `http:` section that turns an HTTP request into descriptors.
 *
 * @example
 * import { createRulesEngine, loadRules } from 'sluice/rules';
 * const loaded = await loadRules('./config');
 * if (!loaded.ok) throw new Error(loaded.issues.map((i) => `${i.file}:${i.line}:${i.column} ${i.message}`).join('\n'));
 * const engine = createRulesEngine({ ruleSet: loaded.ruleSet });
 * const res = await engine.shouldRateLimit({ domain: 'mongo_cps', descriptors: [{ entries: [{ key: 'database', value: 'users' }] }] });
 * @packageDocumentation
 */

export { MAX_DESCRIPTOR_DEPTH, MAX_REPORTED_ISSUES, MAX_RULE_FILE_BYTES, MAX_RULE_NODES } from './budget.js';
export type { RequestErrorCode, RuleIssueCode } from './codes.js';
export { formatRuleIssue, isRequestError, REQUEST_ERROR_CODES, RULE_ISSUE_CODES } from './codes.js';
export { describeRules } from './describe.js';
export { createRulesEngine } from './engine.js';
export type {
  CurrentLimit,
  DescriptorEntry,
  DescriptorStatus,
  HttpCheckRequest,
  HttpRulesVerdict,
  LimitDescription,
  LimitOverride,
  RateLimitRequest,
  RateLimitResponse,
  RequestDescriptor,
  RuleDescription,
  RulesEngine,
  RulesEngineOptions,
} from './engine-types.js';
export type { ExplainedDescriptor, ExplainedLimit, MatchStep, RequestExplanation } from './explain-request.js';
export { explainRequest } from './explain-request.js';
export { httpDescriptorsFor } from './http/descriptors-for.js';
export type { PathFolding } from './http/normalize-path.js';
export { DEFAULT_PATH_FOLDING, foldPath, normalizePath } from './http/normalize-path.js';
export type {
  HttpAction,
  HttpDescriptor,
  HttpDomainDescriptors,
  HttpHeaders,
  HttpRateLimit,
  RuleHttpRequest,
} from './http/types.js';
export type { LoadRulesOptions } from './load-rules.js';
export { loadRules } from './load-rules.js';
export type { MetricLevel } from './metric-key.js';
export { DEFAULT_GATEWAY_PRIORITIES } from './parse/parse-priorities.js';
export { parseRules } from './parse-rules.js';
export type {
  AdaptivePriorities,
  DescriptorLevel,
  DescriptorNode,
  DescriptorPathEntry,
  DomainRules,
  FailMode,
  LlmRules,
  LoadResult,
  ParseOptions,
  PriorityRoute,
  RuleIssue,
  RuleLimit,
  RuleSet,
  RuleSource,
  Unit,
} from './types.js';
export { UNIT_MS, UNITS } from './units.js';
export type { RulesWatcher, WatchRulesOptions } from './watch-rules.js';
export { watchRules } from './watch-rules.js';
