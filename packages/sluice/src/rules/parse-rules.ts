/**
 * `parseRules`: rule files from their text (envoy ratelimit's YAML, or JSON) to a validated RuleSet, every problem
 * reported with its position and code; nothing a file holds makes it throw or run without end.
 */
import { Composer, type Document, LineCounter, Parser, YAMLParseError } from 'yaml';
import {
  IssueList,
  MAX_DESCRIPTOR_DEPTH,
  MAX_REPORTED_ISSUES,
  MAX_RULE_NODES,
  MAX_YAML_NESTING,
  RuleBudgetExceeded,
} from './budget.js';
import { RULE_ISSUE_CODES as C } from './codes.js';
import { mergeDomain } from './merge-domains.js';
import { parseDescriptors } from './parse/parse-descriptors.js';
import { parseFail } from './parse/parse-fail.js';
import { parseHttp } from './parse/parse-http.js';
import { parseLlm } from './parse/parse-llm.js';
import { checkGatewayPriorities } from './parse/parse-priorities.js';
import { Reader } from './parse/reader.js';
import { tooDeepAt } from './parse/yaml-nesting.js';
import type { DomainRules, LoadResult, ParseOptions, RuleSource } from './types.js';

const TOP_LEVEL_FIELDS = ['domain', 'descriptors', 'http', 'fail', 'llm'] as const;

/**
 * Parses rule files from their text, without touching the file system (for tests, `sluice validate` and
 * the admin API). Each source is one domain, in envoy ratelimit's YAML format or as JSON; every problem
 * in every source is reported at once, with its file, line, column and a stable code — the first
 * `MAX_REPORTED_ISSUES` of them, then one that counts the rest. A hostile file cannot make it run
 * without end: aliases are counted at every use against `MAX_RULE_NODES`, and a file nested past what
 * the stack holds is refused, each with a code. It never throws for what a file holds.
 *
 * @example
 * const result = parseRules([{ file: 'api.yaml', text: 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 20 }\n' }]);
 * if (!result.ok) for (const i of result.issues) console.error(`${i.file}:${i.line}:${i.column} ${i.code} ${i.message}`);
 */
export function parseRules(sources: readonly RuleSource[], options: ParseOptions = {}): LoadResult {
  const issues = new IssueList();
  const domains = new Map<string, DomainRules>();
  const files = sources.map((s) => s.file);
  for (const source of sources) {
    const found = new IssueList();
    const parsed = parseGuarded(source, found);
    // Within a file, in reading order.
    found.kept.sort((a, b) => a.line - b.line || a.column - b.column);
    issues.merge(found);
    if (parsed === undefined) continue;
    const { rules, at } = parsed;
    const first = domains.get(rules.domain);
    if (first && options.mergeDomains === true) {
      domains.set(rules.domain, mergeDomain(first, rules, issues));
      continue;
    }
    if (first) {
      issues.add({
        code: C.duplicateDomain,
        message: `domain: '${rules.domain}' is already defined in ${first.file}; each domain lives in one file (or merge them: mergeDomains, MERGE_DOMAIN_CONFIG=true)`,
        file: source.file,
        ...at,
      });
      continue;
    }
    domains.set(rules.domain, rules);
  }
  checkGatewayPriorities(domains.values(), issues);
  if (issues.size > 0) return { ok: false, issues: issues.toArray(), files };
  return { ok: true, ruleSet: { domains, files }, files };
}

type Parsed = { rules: DomainRules; at: { line: number; column: number } };

/** parseSource, turning a spent budget, a stack overflow or any other exception into an issue of the file. */
function parseGuarded(source: RuleSource, issues: IssueList): Parsed | undefined {
  const lines = new LineCounter();
  try {
    return parseSource(source, issues, lines);
  } catch (error) {
    const whole = { file: source.file, line: 0, column: 0 };
    if (error instanceof RuleBudgetExceeded) {
      const { line, col } = lines.linePos(error.offset);
      issues.add({
        code: C.tooComplex,
        message: `reading this file would visit more than ${MAX_RULE_NODES} fields and list items (aliases and << merge keys count at every use); an alias here expands too far — write the rules out, or split them`,
        file: source.file,
        line,
        column: col,
      });
    } else if (error instanceof RangeError) {
      issues.add({
        code: C.tooComplex,
        message: 'the file nests too deeply to read; descriptors rarely need more than a few levels',
        ...whole,
      });
    } else {
      issues.add({ code: C.loadFailed, message: `could not be read: ${String(error)}`, ...whole });
    }
    return undefined;
  }
}

/**
 * yaml's parseDocument, with the text's nesting measured between parsing and composing (the composer
 * recurses per level): a file past MAX_YAML_NESTING is an issue at its deepest collection, undefined returned.
 */
function parseBounded(source: RuleSource, issues: IssueList, lines: LineCounter): Document.Parsed | undefined {
  const tokens = [...new Parser(lines.addNewLine).parse(source.text)];
  const deep = tooDeepAt(tokens, MAX_YAML_NESTING);
  if (deep !== undefined) {
    const { line, col } = lines.linePos(deep);
    const message = `the YAML nests more than ${MAX_YAML_NESTING} levels deep here; descriptors may nest ${MAX_DESCRIPTOR_DEPTH} levels (two YAML levels each)`;
    issues.add({ code: C.tooComplex, message, file: source.file, line, column: col });
    return undefined;
  }
  const composer = new Composer({ version: '1.1', merge: true });
  let doc: Document.Parsed | undefined;
  for (const next of composer.compose(tokens, true, source.text.length)) {
    if (doc === undefined) doc = next;
    else {
      doc.errors.push(
        new YAMLParseError(next.range.slice(0, 2) as [number, number], 'MULTIPLE_DOCS', 'several documents'),
      );
      break;
    }
  }
  return doc;
}

function parseSource(source: RuleSource, issues: IssueList, lines: LineCounter): Parsed | undefined {
  // YAML 1.1, as envoy ratelimit's decoder reads it (yes/no are booleans; << merge keys work).
  const doc = parseBounded(source, issues, lines);
  if (doc === undefined) return undefined;
  if (doc.errors.length > 0) {
    for (const error of doc.errors.slice(0, MAX_REPORTED_ISSUES + 1)) {
      const { line, col } = lines.linePos(error.pos[0]);
      const message =
        error.code === 'MULTIPLE_DOCS'
          ? 'a rules file holds one document (one domain); put each --- document in a file of its own'
          : (error.message.split('\n')[0] ?? error.message);
      issues.add({ code: C.badYaml, message: `not valid YAML: ${message}`, file: source.file, line, column: col });
    }
    return undefined;
  }
  const r = new Reader(source.file, doc, lines);
  const top = r.resolve(doc.contents);
  if (top === undefined) {
    r.report(C.emptyDomain, 'the file is empty; it needs at least domain: <name>', 0);
    issues.merge(r.issues);
    return undefined;
  }
  const f = r.fields(top, '(top level)', TOP_LEVEL_FIELDS);
  if (f === undefined) {
    issues.merge(r.issues);
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
  const { rateLimits: http, pathMatching, priorityRoutes, adaptivePriorities } = parseHttp(r, f.get('http'));
  const llm = parseLlm(r, f.get('llm'));
  issues.merge(r.issues);
  if (!domain) return undefined;
  const { line, col } = r.position(domainField?.at);
  return {
    rules: {
      domain,
      file: source.file,
      ...(fail === undefined ? {} : { fail }),
      root,
      http,
      ...(pathMatching === undefined ? {} : { pathMatching }),
      ...(priorityRoutes === undefined ? {} : { priorityRoutes }),
      ...(adaptivePriorities === undefined ? {} : { adaptivePriorities }),
      ...(llm === undefined ? {} : { llm }),
    },
    at: { line, column: col },
  };
}
