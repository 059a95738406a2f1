/**
 * Parsing `http.priorities` (which priority of the gateway's adaptive limit, `--adaptive`, a route's requests
 * take) and `http.adaptive.priorities` (the names and shares of those priorities, when not the default ones).
 */
import { isMap, isScalar } from 'yaml';
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { AdaptivePriorities, DomainRules, PriorityRoute, RuleIssue } from '../types.js';
import type { Field, Reader } from './reader.js';

/** The gateway's priorities unless a rules file names its own, most important first, with their shares. */
export const DEFAULT_GATEWAY_PRIORITIES: readonly { readonly name: string; readonly share: number }[] = [
  { name: 'critical', share: 0.5 },
  { name: 'normal', share: 0.3 },
  { name: 'batch', share: 0.2 },
];
/** Most `http.priorities` entries in one file (each request walks them). */
export const MAX_PRIORITY_ROUTES = 256;
/** Most priorities `http.adaptive.priorities` names (as `createAdaptiveLimiter` takes). */
export const MAX_GATEWAY_PRIORITIES = 16;
const METHOD = /^[A-Z]{1,16}$/;
/** A priority name: shown on the dashboard and as a metrics label, so short and plain. */
const PRIORITY_NAME = /^[a-z][a-z0-9_-]{0,31}$/;

/** Where issues across files go (an `IssueList`). */
interface IssueSink {
  add(issue: RuleIssue): void;
}

/** `http.adaptive: { priorities: { gold: 0.6, silver: 0.3, bronze: 0.1 } }`; undefined when absent or invalid. */
export function parseAdaptivePriorities(r: Reader, field: Field | undefined): AdaptivePriorities | undefined {
  if (field?.value === undefined) return undefined;
  const f = r.fields(field.value, 'http.adaptive', ['priorities'], field.at);
  const pf = f?.get('priorities');
  if (f === undefined) return undefined;
  if (pf?.value === undefined) {
    r.report(
      C.missingField,
      'http.adaptive.priorities: required, e.g. { gold: 0.6, silver: 0.3, bronze: 0.1 }',
      field.at,
    );
    return undefined;
  }
  const node = pf.value;
  if (isMap(node) && node.items.length > MAX_GATEWAY_PRIORITIES) {
    r.report(
      C.invalidValue,
      `http.adaptive.priorities: ${node.items.length} priorities, at most ${MAX_GATEWAY_PRIORITIES}`,
      pf.at,
    );
    return undefined;
  }
  // The names are the map's own keys: read them, then the map's fields against them (merge keys, aliases).
  const names = isMap(node) ? node.items.map((p) => (isScalar(p.key) ? String(p.key.value) : '')) : [];
  const shares = r.fields(node, 'http.adaptive.priorities', names, pf.at);
  if (shares === undefined) return undefined;
  const out: { name: string; share: number }[] = [];
  for (const [name, share] of shares) {
    const path = `http.adaptive.priorities.${name}`;
    const value = r.number(share, path);
    if (!PRIORITY_NAME.test(name)) {
      r.report(
        C.invalidValue,
        `${path}: a priority name is a-z first, then a-z, 0-9, _ or - (32 at most)`,
        share.keyNode,
      );
    } else if (value !== undefined && !(value > 0 && value <= 1)) {
      r.report(C.invalidValue, `${path}: ${value} is not a share above 0 and at most 1`, share.at);
    } else if (value !== undefined) out.push({ name, share: value });
  }
  if (out.length !== shares.size) return undefined;
  if (out.length === 0) {
    r.report(C.invalidValue, 'http.adaptive.priorities: name at least one priority', pf.at);
    return undefined;
  }
  const total = out.reduce((sum, p) => sum + p.share, 0);
  if (total > 1 + 1e-9) {
    r.report(
      C.invalidValue,
      `http.adaptive.priorities: the shares add up to ${Number(total.toFixed(6))}; they are shares of one limit, at most 1`,
      pf.at,
    );
    return undefined;
  }
  return { priorities: out, file: r.file, line: r.position(field.keyNode).line };
}

/** A second file naming the gateway's priorities: an issue at its declaration. */
function secondDeclaration(first: AdaptivePriorities, second: AdaptivePriorities, issues: IssueSink): void {
  issues.add({
    code: C.conflictingFields,
    message: `http.adaptive.priorities: already named in ${first.file}:${first.line}; the gateway has one adaptive limit, so name its priorities in one file`,
    file: second.file,
    line: second.line,
    column: 1,
  });
}

/**
 * The gateway's priorities of two files of one domain merged (`mergeDomains`): the routes of both, in order, and
 * the one declaration of names (a second is an issue).
 */
export function mergeGatewayPriorities(
  base: DomainRules,
  next: DomainRules,
  issues: IssueSink,
): Pick<DomainRules, 'priorityRoutes' | 'adaptivePriorities'> {
  const routes = [...(base.priorityRoutes ?? []), ...(next.priorityRoutes ?? [])];
  if (base.adaptivePriorities && next.adaptivePriorities)
    secondDeclaration(base.adaptivePriorities, next.adaptivePriorities, issues);
  const declared = base.adaptivePriorities ?? next.adaptivePriorities;
  return {
    ...(base.priorityRoutes === undefined && next.priorityRoutes === undefined ? {} : { priorityRoutes: routes }),
    ...(declared === undefined ? {} : { adaptivePriorities: declared }),
  };
}

/**
 * The checks across files: the gateway has one adaptive limit, so at most one file names its priorities, and
 * every file's `http.priorities` must name one of them (the default ones when no file names any).
 */
export function checkGatewayPriorities(domains: Iterable<DomainRules>, issues: IssueSink): void {
  let declared: AdaptivePriorities | undefined;
  const list = [...domains];
  for (const rules of list) {
    const own = rules.adaptivePriorities;
    if (own === undefined) continue;
    if (declared === undefined) declared = own;
    else secondDeclaration(declared, own, issues);
  }
  const names = (declared?.priorities ?? DEFAULT_GATEWAY_PRIORITIES).map((p) => p.name);
  const from = declared === undefined ? 'the default ones' : `from ${declared.file}:${declared.line}`;
  for (const rules of list) {
    for (const route of rules.priorityRoutes ?? []) {
      if (names.includes(route.priority)) continue;
      issues.add({
        code: C.invalidValue,
        message: `http.priorities: '${route.priority}' is not one of the gateway's priorities (${names.join(', ')}, ${from}); name one of them, or add it to http.adaptive.priorities`,
        file: route.file,
        line: route.line,
        column: 1,
      });
    }
  }
}

/** `http.priorities: [{ path_prefix: /pay, method?: POST, priority: critical }]`; undefined when absent. */
export function parsePriorityRoutes(r: Reader, field: Field | undefined): PriorityRoute[] | undefined {
  if (field?.value === undefined) return undefined;
  const items = r.list(field, 'http.priorities') ?? [];
  if (items.length > MAX_PRIORITY_ROUTES) {
    r.report(C.invalidValue, `http.priorities: ${items.length} entries, at most ${MAX_PRIORITY_ROUTES}`, field.at);
    return undefined;
  }
  const out: PriorityRoute[] = [];
  for (const [i, item] of items.entries()) {
    const path = `http.priorities[${i}]`;
    const f = r.fields(item.node, path, ['path_prefix', 'method', 'priority'], item.at);
    if (f === undefined) continue;
    const prefix = r.string(f.get('path_prefix'), `${path}.path_prefix`);
    const method = r.string(f.get('method'), `${path}.method`)?.toUpperCase();
    const priority = r.string(f.get('priority'), `${path}.priority`);
    let ok = true;
    if (prefix === undefined || !prefix.startsWith('/') || prefix.length > 1024) {
      if (prefix !== undefined || !f.has('path_prefix'))
        r.report(
          C.invalidValue,
          `${path}.path_prefix: required, a path starting with / (at most 1024 characters)`,
          f.get('path_prefix')?.at ?? item.at,
        );
      ok = false;
    }
    if (method !== undefined && !METHOD.test(method)) {
      r.report(
        C.invalidValue,
        `${path}.method: ${JSON.stringify(method)} is not an HTTP method`,
        f.get('method')?.at ?? item.at,
      );
      ok = false;
    }
    // Whether the name is one of the gateway's is checked across files (checkGatewayPriorities).
    if (priority === undefined || !PRIORITY_NAME.test(priority)) {
      if (priority !== undefined || !f.has('priority'))
        r.report(
          C.invalidValue,
          `${path}.priority: required, a priority name (${DEFAULT_GATEWAY_PRIORITIES.map((p) => p.name).join(', ')} unless http.adaptive.priorities names others)`,
          f.get('priority')?.at ?? item.at,
        );
      ok = false;
    }
    if (!ok) continue;
    const { line } = r.position(item.at);
    out.push({
      pathPrefix: prefix as string,
      ...(method === undefined ? {} : { method }),
      priority: priority as string,
      file: r.file,
      line,
    });
  }
  return out;
}
