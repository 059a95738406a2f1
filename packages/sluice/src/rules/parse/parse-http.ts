/**
 * Parsing a rule file's `http:` section: Envoy's route actions that turn an HTTP request into descriptors, and how
 * paths are folded before they match.
 */
import { isMap } from 'yaml';
import { RULE_ISSUE_CODES as C } from '../codes.js';
import { DEFAULT_PATH_FOLDING, type PathFolding } from '../http/normalize-path.js';
import type { HttpAction, HttpRateLimit } from '../http/types.js';
import type { AdaptivePriorities, PriorityRoute } from '../types.js';
import { parseAction } from './parse-http-action.js';
import { parseAdaptivePriorities, parsePriorityRoutes } from './parse-priorities.js';
import type { Field, Reader } from './reader.js';

interface ParsedHttp {
  rateLimits: HttpRateLimit[];
  pathMatching?: PathFolding;
  priorityRoutes?: PriorityRoute[];
  adaptivePriorities?: AdaptivePriorities;
}

/** Validates the top-level `http:` section: `{ rate_limits: [...], path_matching?, priorities?, adaptive? }`. */
export function parseHttp(r: Reader, field: Field | undefined): ParsedHttp {
  if (field?.value === undefined) return { rateLimits: [] };
  const f = r.fields(field.value, 'http', ['rate_limits', 'path_matching', 'priorities', 'adaptive'], field.at);
  const parsed = parseRateLimits(r, f);
  const priorityRoutes = parsePriorityRoutes(r, f?.get('priorities'));
  const adaptivePriorities = parseAdaptivePriorities(r, f?.get('adaptive'));
  return {
    ...parsed,
    ...(priorityRoutes === undefined ? {} : { priorityRoutes }),
    ...(adaptivePriorities === undefined ? {} : { adaptivePriorities }),
  };
}

function parseRateLimits(r: Reader, f: Map<string, Field> | undefined): ParsedHttp {
  const pathMatching = parsePathMatching(r, f?.get('path_matching'));
  const rateLimits = f?.get('rate_limits');
  if (f === undefined || rateLimits === undefined)
    return pathMatching ? { rateLimits: [], pathMatching } : { rateLimits: [] };
  const items = r.list(rateLimits, 'http.rate_limits') ?? [];
  const out: HttpRateLimit[] = [];
  for (const [i, item] of items.entries()) {
    const path = `http.rate_limits[${i}]`;
    const lf = r.fields(item.node, path, ['actions', 'hits_addend'], item.at);
    if (lf === undefined) continue;
    const actionsField = lf.get('actions');
    if (actionsField === undefined) {
      r.report(C.missingField, `${path}: needs actions: [...]`, item.at);
      continue;
    }
    const actionItems = r.list(actionsField, `${path}.actions`);
    if (actionItems === undefined) continue;
    if (actionItems.length === 0) {
      r.report(C.missingField, `${path}.actions: needs at least one action`, actionsField.at);
      continue;
    }
    const actions: HttpAction[] = [];
    let ok = true;
    for (const [j, action] of actionItems.entries()) {
      const parsed = parseAction(r, action.node, action.at, `${path}.actions[${j}]`);
      if (parsed) actions.push(parsed);
      else ok = false;
    }
    const hitsAddend = parseHitsAddend(r, lf.get('hits_addend'), `${path}.hits_addend`);
    if (!ok || hitsAddend === null) continue;
    const { line } = r.position(item.at);
    out.push({ actions, ...(hitsAddend === undefined ? {} : { hitsAddend }), file: r.file, line });
  }
  return pathMatching ? { rateLimits: out, pathMatching } : { rateLimits: out };
}

/**
 * `http.path_matching: { ignore_case, ignore_trailing_slash, ignore_path_parameters }` — all default to
 * true: a limit written for `/login` also holds for `/Login`, `/login/` (which many servers, Express by
 * default, treat alike) and `/login;x` (which Tomcat, Jetty and Spring serve as `/login`).
 */
function parsePathMatching(r: Reader, field: Field | undefined): PathFolding | undefined {
  if (field?.value === undefined) return undefined;
  const f = r.fields(
    field.value,
    'http.path_matching',
    ['ignore_case', 'ignore_trailing_slash', 'ignore_path_parameters'],
    field.at,
  );
  if (f === undefined) return undefined;
  return {
    ignoreCase: r.boolean(f.get('ignore_case'), 'http.path_matching.ignore_case') ?? DEFAULT_PATH_FOLDING.ignoreCase,
    ignoreTrailingSlash:
      r.boolean(f.get('ignore_trailing_slash'), 'http.path_matching.ignore_trailing_slash') ??
      DEFAULT_PATH_FOLDING.ignoreTrailingSlash,
    ignorePathParameters:
      r.boolean(f.get('ignore_path_parameters'), 'http.path_matching.ignore_path_parameters') ??
      DEFAULT_PATH_FOLDING.ignorePathParameters,
  };
}

/** `hits_addend: 3` or Envoy's `hits_addend: { number: 3 }`; null when invalid. */
function parseHitsAddend(r: Reader, field: Field | undefined, path: string): number | undefined | null {
  if (field === undefined) return undefined;
  let numberField: Field | undefined = field;
  let numberPath = path;
  if (isMap(field.value)) {
    numberField = r.fields(field.value, path, ['number'], field.at)?.get('number');
    numberPath = `${path}.number`;
    if (numberField === undefined) return null;
  }
  const n = r.number(numberField, numberPath);
  if (n === undefined) return null;
  if (!Number.isInteger(n) || n < 0 || n > 1_000_000_000) {
    r.report(C.invalidValue, `${numberPath}: ${n} is not a whole number between 0 and 1e9`, numberField.at);
    return null;
  }
  return n;
}
