/**
 * Parsing a rule file's `http:` section: Envoy's route actions that turn an HTTP request into descriptors, and how
 * paths are folded before they match.
 */
import { isMap, isScalar } from 'yaml';
import { RULE_ISSUE_CODES as C } from '../codes.js';
import { DEFAULT_PATH_FOLDING, type PathFolding } from '../http/normalize-path.js';
import type { HttpAction, HttpRateLimit } from '../http/types.js';
import type { AdaptivePriorities, PriorityRoute } from '../types.js';
import { parseHeaderMatchers, parseQueryMatchers } from './parse-matchers.js';
import { parseAdaptivePriorities, parsePriorityRoutes } from './parse-priorities.js';
import { type Field, joinPath, type Node, type Reader } from './reader.js';

/** Action names and the fields each takes. `query_parameter` is an alias of Envoy's `query_parameters`. */
const ACTIONS: Readonly<Record<string, readonly string[]>> = {
  remote_address: [],
  masked_remote_address: ['v4_prefix_mask_len', 'v6_prefix_mask_len'],
  request_headers: ['header_name', 'descriptor_key', 'skip_if_absent'],
  generic_key: ['descriptor_value', 'descriptor_key'],
  header_value_match: ['descriptor_key', 'descriptor_value', 'expect_match', 'headers'],
  query_parameters: ['query_parameter_name', 'descriptor_key', 'skip_if_absent'],
  query_parameter: ['query_parameter_name', 'descriptor_key', 'skip_if_absent'],
  query_parameter_value_match: ['descriptor_key', 'descriptor_value', 'expect_match', 'query_parameters'],
  path: ['descriptor_key', 'segments'],
  method: ['descriptor_key'],
};

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

function parseAction(r: Reader, node: Node | undefined, at: Node, path: string): HttpAction | undefined {
  if (!isMap(node) || node.items.length !== 1) {
    r.report(
      C.invalidAction,
      `${path}: an action is a map with one action name, e.g. { remote_address: {} } (known: ${Object.keys(ACTIONS).join(', ')})`,
      at,
    );
    return undefined;
  }
  const pair = node.items[0] as { key: unknown; value: unknown };
  const keyNode = pair.key as Node;
  const name = isScalar(keyNode) ? String(keyNode.value) : '';
  const known = ACTIONS[name];
  if (known === undefined) {
    r.report(C.unknownField, `${path}.${name}: unknown action (known: ${Object.keys(ACTIONS).join(', ')})`, keyNode);
    return undefined;
  }
  const actionPath = `${path}.${name}`;
  const value = r.resolve(pair.value);
  // `remote_address:` with nothing after it is as good as `remote_address: {}`.
  const empty = value === undefined || (isScalar(value) && value.value === null);
  const f = empty ? new Map<string, Field>() : r.fields(value, actionPath, known, (pair.value as Node) ?? keyNode);
  if (f === undefined) return undefined;
  return buildAction(r, name, f, actionPath, (pair.value as Node) ?? keyNode);
}

function buildAction(r: Reader, name: string, f: Map<string, Field>, path: string, at: Node): HttpAction | undefined {
  const p = (n: string) => joinPath(path, n);
  const str = (n: string) => r.string(f.get(n), p(n));
  const bool = (n: string, fallback: boolean) => r.boolean(f.get(n), p(n)) ?? fallback;
  const required = (n: string): string | undefined => {
    const v = str(n);
    if (v === undefined || v === '') {
      if (v === '' || !f.has(n))
        r.report(C.missingField, `${p(n)}: required, and must not be empty`, f.get(n)?.at ?? at);
      return undefined;
    }
    return v;
  };
  const key = (fallback: string) => str('descriptor_key') || fallback;
  switch (name) {
    case 'remote_address':
      return { type: 'remote_address' };
    case 'masked_remote_address': {
      const v4 = prefixLength(r, f.get('v4_prefix_mask_len'), p('v4_prefix_mask_len'), 32);
      const v6 = prefixLength(r, f.get('v6_prefix_mask_len'), p('v6_prefix_mask_len'), 128);
      return v4 === undefined || v6 === undefined
        ? undefined
        : { type: 'masked_remote_address', v4PrefixLen: v4, v6PrefixLen: v6 };
    }
    case 'request_headers': {
      const headerName = required('header_name');
      const descriptorKey = required('descriptor_key');
      if (headerName === undefined || descriptorKey === undefined) return undefined;
      return {
        type: 'request_headers',
        headerName: headerName.toLowerCase(),
        descriptorKey,
        skipIfAbsent: bool('skip_if_absent', false),
      };
    }
    case 'generic_key': {
      const descriptorValue = required('descriptor_value');
      return descriptorValue === undefined
        ? undefined
        : { type: 'generic_key', descriptorKey: key('generic_key'), descriptorValue };
    }
    case 'header_value_match': {
      const descriptorValue = required('descriptor_value');
      const headersField = f.get('headers');
      if (headersField === undefined)
        r.report(C.missingField, `${p('headers')}: required (a list of header matchers)`, at);
      const headers = headersField && parseHeaderMatchers(r, headersField, p('headers'));
      if (descriptorValue === undefined || headers === undefined) return undefined;
      return {
        type: 'header_value_match',
        descriptorKey: key('header_match'),
        descriptorValue,
        expectMatch: bool('expect_match', true),
        headers,
      };
    }
    case 'query_parameters':
    case 'query_parameter': {
      const parameterName = required('query_parameter_name');
      const descriptorKey = required('descriptor_key');
      if (parameterName === undefined || descriptorKey === undefined) return undefined;
      return { type: 'query_parameters', parameterName, descriptorKey, skipIfAbsent: bool('skip_if_absent', false) };
    }
    case 'query_parameter_value_match': {
      const descriptorValue = required('descriptor_value');
      const paramsField = f.get('query_parameters');
      if (paramsField === undefined) {
        r.report(C.missingField, `${p('query_parameters')}: required (a list of query parameter matchers)`, at);
      }
      const parameters = paramsField && parseQueryMatchers(r, paramsField, p('query_parameters'));
      if (descriptorValue === undefined || parameters === undefined) return undefined;
      return {
        type: 'query_parameter_value_match',
        descriptorKey: key('query_match'),
        descriptorValue,
        expectMatch: bool('expect_match', true),
        parameters,
      };
    }
    case 'path': {
      const segmentsField = f.get('segments');
      const segments = r.number(segmentsField, p('segments'));
      if (segmentsField && segments !== undefined && (!Number.isInteger(segments) || segments < 1)) {
        r.report(C.invalidValue, `${p('segments')}: ${segments} is not a whole number ≥ 1`, segmentsField.at);
        return undefined;
      }
      if (segmentsField && segments === undefined) return undefined;
      return { type: 'path', descriptorKey: key('path'), ...(segments === undefined ? {} : { segments }) };
    }
    default:
      return { type: 'method', descriptorKey: key('method') };
  }
}

function prefixLength(r: Reader, field: Field | undefined, path: string, max: number): number | undefined {
  if (field === undefined) return max;
  const n = r.number(field, path);
  if (n === undefined) return undefined;
  if (!Number.isInteger(n) || n < 0 || n > max) {
    r.report(C.invalidValue, `${path}: ${n} is not a prefix length between 0 and ${max}`, field.at);
    return undefined;
  }
  return n;
}
