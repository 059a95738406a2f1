import { LineCounter, parseDocument } from 'yaml';
import { RULE_ISSUE_CODES as C } from './codes.js';
import { parseDescriptors } from './parse/parse-descriptors.js';
import { parseFail } from './parse/parse-fail.js';
import { parseHttp } from './parse/parse-http.js';
import { Reader } from './parse/reader.js';
import type { DomainRules, LoadResult, RuleIssue, RuleSource } from './types.js';

const TOP_LEVEL_FIELDS = ['domain', 'descriptors', 'http', 'fail'] as const;

/**
 * Parses rule files from their text, without touching the file system (for tests, `sluice validate` and
 * the admin API). Each source is one domain, in envoy ratelimit's YAML format or as JSON; every problem
 * in every source is reported at once, with its file, line, column and a stable code.
 *
 * @example
 * const result = parseRules([{ file: 'api.yaml', text: 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 20 }\n' }]);
 * if (!result.ok) for (const i of result.issues) console.error(`${i.file}:${i.line}:${i.column} ${i.code} ${i.message}`);
 */
export function parseRules(sources: readonly RuleSource[]): LoadResult {
  const issues: RuleIssue[] = [];
  const domains = new Map<string, DomainRules>();
  const files = sources.map((s) => s.file);
  for (const source of sources) {
    const found: RuleIssue[] = [];
    const parsed = parseSource(source, found);
    // Within a file, in reading order.
    issues.push(...found.sort((a, b) => a.line - b.line || a.column - b.column));
    if (parsed === undefined) continue;
    const { rules, at } = parsed;
    const first = domains.get(rules.domain);
    if (first) {
      issues.push({
        code: C.duplicateDomain,
        message: `domain: '${rules.domain}' is already defined in ${first.file}; each domain lives in one file`,
        file: source.file,
        ...at,
      });
      continue;
    }
    domains.set(rules.domain, rules);
  }
  if (issues.length > 0) return { ok: false, issues, files };
  return { ok: true, ruleSet: { domains, files }, files };
}

function parseSource(
  source: RuleSource,
  issues: RuleIssue[],
): { rules: DomainRules; at: { line: number; column: number } } | undefined {
  const lines = new LineCounter();
  // YAML 1.1, as envoy ratelimit's decoder reads it (yes/no are booleans; << merge keys work).
  const doc = parseDocument(source.text, { lineCounter: lines, version: '1.1', merge: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    for (const error of doc.errors) {
      const { line, col } = lines.linePos(error.pos[0]);
      const message =
        error.code === 'MULTIPLE_DOCS'
          ? 'a rules file holds one document (one domain); put each --- document in a file of its own'
          : (error.message.split('\n')[0] ?? error.message);
      issues.push({ code: C.badYaml, message: `not valid YAML: ${message}`, file: source.file, line, column: col });
    }
    return undefined;
  }
  const r = new Reader(source.file, doc, lines);
  const top = r.resolve(doc.contents);
  if (top === undefined) {
    r.report(C.emptyDomain, 'the file is empty; it needs at least domain: <name>', 0);
    issues.push(...r.issues);
    return undefined;
  }
  const f = r.fields(top, '(top level)', TOP_LEVEL_FIELDS);
  if (f === undefined) {
    issues.push(...r.issues);
    return undefined;
  }
  const domainField = f.get('domain');
  const domain = r.string(domainField, 'domain');
  if (domain === '' || domainField === undefined) {
    r.report(C.emptyDomain, 'domain: every file needs a non-empty domain', domainField?.at ?? top);
  }
  const failField = f.get('fail');
  const fail = failField ? parseFail(r, failField, 'fail') : undefined;
  // Descriptors are validated even without a domain, so their problems are reported too.
  const root = parseDescriptors(r, f.get('descriptors'), 'descriptors', { domain: domain ?? '', parentPath: [], fail });
  const http = parseHttp(r, f.get('http'));
  issues.push(...r.issues);
  if (!domain) return undefined;
  const { line, col } = r.position(domainField?.at);
  return {
    rules: {
      domain,
      file: source.file,
      ...(fail === undefined ? {} : { fail }),
      root,
      http,
    },
    at: { line, column: col },
  };
}
