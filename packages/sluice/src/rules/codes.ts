/**
 * The stable codes of every problem a rule file can have and of every malformed rate-limit request, and the one-line
 * `file:line:column CODE message` form of an issue.
 */
import { isSluiceError, type SluiceError } from '../core/errors.js';
import type { RuleIssue } from './types.js';

/**
 * Every kind of problem `loadRules`/`parseRules` report, one stable code each. The values are what
 * `RuleIssue.code` holds; docs/rules.md lists them with examples.
 */
export const RULE_ISSUE_CODES = {
  /** The file is not valid YAML (or JSON): syntax, duplicate map keys, several documents. */
  badYaml: 'ERR_SLUICE_RULES_BAD_YAML',
  /** A file or directory could not be read. */
  readFailed: 'ERR_SLUICE_RULES_READ_FAILED',
  /** A directory holds no `.yaml`, `.yml` or `.json` file, or no path was given. */
  noFiles: 'ERR_SLUICE_RULES_NO_FILES',
  /** `domain` is missing or empty. */
  emptyDomain: 'ERR_SLUICE_RULES_EMPTY_DOMAIN',
  /** Two files declare the same domain. */
  duplicateDomain: 'ERR_SLUICE_RULES_DUPLICATE_DOMAIN',
  /** A descriptor's `key` is missing or empty. */
  emptyKey: 'ERR_SLUICE_RULES_EMPTY_KEY',
  /** Two descriptors at one level have the same key and value. */
  duplicateDescriptor: 'ERR_SLUICE_RULES_DUPLICATE_DESCRIPTOR',
  /** `unit` is not second, minute, hour, day, week, month or year. */
  unknownUnit: 'ERR_SLUICE_RULES_UNKNOWN_UNIT',
  /** `unit` (or `period`) given with `unlimited: true`. */
  unitWithUnlimited: 'ERR_SLUICE_RULES_UNIT_WITH_UNLIMITED',
  /** `replaces` names the limit's own name. */
  replacesSelf: 'ERR_SLUICE_RULES_REPLACES_SELF',
  /** A `replaces` entry has no (or an empty) `name`. */
  replacesEmpty: 'ERR_SLUICE_RULES_REPLACES_EMPTY',
  /** A field the format does not know (a typo, or a field in the wrong place). */
  unknownField: 'ERR_SLUICE_RULES_UNKNOWN_FIELD',
  /** A field has the wrong type (a list where a map belongs, a string where a number belongs, …). */
  wrongType: 'ERR_SLUICE_RULES_WRONG_TYPE',
  /** `period` is not a duration. */
  badDuration: 'ERR_SLUICE_RULES_BAD_DURATION',
  /** `algorithm` is not one of the six. */
  unknownAlgorithm: 'ERR_SLUICE_RULES_UNKNOWN_ALGORITHM',
  /** `share_threshold: true` on a descriptor whose value has no `*`. */
  shareThresholdWithoutWildcard: 'ERR_SLUICE_RULES_SHARE_THRESHOLD_WITHOUT_WILDCARD',
  /** A required field is missing (`unit`/`period` of a limit, an action's `descriptor_value`, …). */
  missingField: 'ERR_SLUICE_RULES_MISSING_FIELD',
  /** Two fields that exclude each other (`unit` and `period`, `rate_limit` and `rate_limits`, …). */
  conflictingFields: 'ERR_SLUICE_RULES_CONFLICTING_FIELDS',
  /** `requests_per_unit` out of range, or a limit too large to count exactly. */
  invalidLimit: 'ERR_SLUICE_RULES_INVALID_LIMIT',
  /** `burst` out of range or given to an algorithm that takes none. */
  invalidBurst: 'ERR_SLUICE_RULES_INVALID_BURST',
  /** Any other bad value: `fail`, a prefix length, a regex, `hits_addend`. */
  invalidValue: 'ERR_SLUICE_RULES_INVALID_VALUE',
  /** An `http` action that is not a map with exactly one action name. */
  invalidAction: 'ERR_SLUICE_RULES_INVALID_ACTION',
  /** A file larger than `MAX_RULE_FILE_BYTES`; it is not read. */
  fileTooLarge: 'ERR_SLUICE_RULES_FILE_TOO_LARGE',
  /** Aliases or merge keys expand a file past `MAX_RULE_NODES`, or it nests too deeply to read. */
  tooComplex: 'ERR_SLUICE_RULES_TOO_COMPLEX',
  /** More problems than `MAX_REPORTED_ISSUES`: this last issue counts the ones not listed. */
  tooManyIssues: 'ERR_SLUICE_RULES_TOO_MANY_ISSUES',
  /** Loading failed for another reason (an exception, a parse that ran out of time or memory). */
  loadFailed: 'ERR_SLUICE_RULES_LOAD_FAILED',
} as const;

/**
 * One issue as one line, the way compilers print them: `file:line:column CODE message`.
 * @example console.error(result.issues.map(formatRuleIssue).join('\n'));
 */
export function formatRuleIssue(issue: RuleIssue): string {
  const where = issue.line > 0 ? `${issue.file}:${issue.line}:${issue.column}` : issue.file;
  return `${where} ${issue.code} ${issue.message}`;
}

/** One of the `RULE_ISSUE_CODES`. */
export type RuleIssueCode = (typeof RULE_ISSUE_CODES)[keyof typeof RULE_ISSUE_CODES];

/**
 * Codes of the SluiceErrors `shouldRateLimit` throws for a malformed request (never for a rejection).
 * The service maps every one of them to gRPC `INVALID_ARGUMENT` / HTTP 400.
 */
export const REQUEST_ERROR_CODES = {
  emptyDomain: 'ERR_SLUICE_REQUEST_EMPTY_DOMAIN',
  emptyDescriptors: 'ERR_SLUICE_REQUEST_EMPTY_DESCRIPTORS',
  /** No longer raised: a descriptor with no entries is answered OK with no limit, as envoy ratelimit does. */
  emptyEntries: 'ERR_SLUICE_REQUEST_EMPTY_ENTRIES',
  emptyKey: 'ERR_SLUICE_REQUEST_EMPTY_KEY',
  /** Anything else malformed: wrong types, a bad `hits_addend`, a bad `limit` override. */
  invalid: 'ERR_SLUICE_REQUEST_INVALID',
} as const;

/** One of the `REQUEST_ERROR_CODES`. */
export type RequestErrorCode = (typeof REQUEST_ERROR_CODES)[keyof typeof REQUEST_ERROR_CODES];

/** True when `error` is a malformed-request error thrown by `shouldRateLimit` (map it to INVALID_ARGUMENT). */
export function isRequestError(error: unknown): error is SluiceError {
  return isSluiceError(error) && error.code.startsWith('ERR_SLUICE_REQUEST_');
}
