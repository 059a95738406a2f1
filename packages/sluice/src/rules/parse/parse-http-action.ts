/**
 * Parsing one of a rule file's HTTP actions (`http.rate_limits[].actions[]`): Envoy's route actions that each add a
 * descriptor entry from the request, checked field by field.
 */
import { isMap, isScalar } from 'yaml';
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { HttpAction } from '../http/types.js';
import { parseHeaderMatchers, parseQueryMatchers } from './parse-matchers.js';
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

/** One action: `{ name: { fields } }`, checked; undefined (with the problems reported) when it is not one. */
export function parseAction(r: Reader, node: Node | undefined, at: Node, path: string): HttpAction | undefined {
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

/** One action's fields, read with their paths for the messages. */
class ActionFields {
  constructor(
    readonly r: Reader,
    readonly f: Map<string, Field>,
    readonly path: string,
    /** Where a missing field is reported. */
    readonly at: Node,
  ) {}

  p(n: string): string {
    return joinPath(this.path, n);
  }

  str(n: string): string | undefined {
    return this.r.string(this.f.get(n), this.p(n));
  }

  bool(n: string, fallback: boolean): boolean {
    return this.r.boolean(this.f.get(n), this.p(n)) ?? fallback;
  }

  /** A string field that must be there and not empty. */
  required(n: string): string | undefined {
    const v = this.str(n);
    if (v === undefined || v === '') {
      if (v === '' || !this.f.has(n))
        this.r.report(C.missingField, `${this.p(n)}: required, and must not be empty`, this.f.get(n)?.at ?? this.at);
      return undefined;
    }
    return v;
  }

  /** `descriptor_key`, or the action's default key. */
  key(fallback: string): string {
    return this.str('descriptor_key') || fallback;
  }
}

function buildAction(r: Reader, name: string, f: Map<string, Field>, path: string, at: Node): HttpAction | undefined {
  const a = new ActionFields(r, f, path, at);
  switch (name) {
    case 'remote_address':
      return { type: 'remote_address' };
    case 'masked_remote_address':
      return maskedRemoteAddress(a);
    case 'request_headers':
      return requestHeaders(a);
    case 'generic_key': {
      const descriptorValue = a.required('descriptor_value');
      return descriptorValue === undefined
        ? undefined
        : { type: 'generic_key', descriptorKey: a.key('generic_key'), descriptorValue };
    }
    case 'header_value_match':
      return headerValueMatch(a);
    case 'query_parameters':
    case 'query_parameter':
      return queryParameters(a);
    case 'query_parameter_value_match':
      return queryParameterValueMatch(a);
    case 'path':
      return pathAction(a);
    default:
      return { type: 'method', descriptorKey: a.key('method') };
  }
}

function maskedRemoteAddress(a: ActionFields): HttpAction | undefined {
  const v4 = prefixLength(a.r, a.f.get('v4_prefix_mask_len'), a.p('v4_prefix_mask_len'), 32);
  const v6 = prefixLength(a.r, a.f.get('v6_prefix_mask_len'), a.p('v6_prefix_mask_len'), 128);
  return v4 === undefined || v6 === undefined
    ? undefined
    : { type: 'masked_remote_address', v4PrefixLen: v4, v6PrefixLen: v6 };
}

function requestHeaders(a: ActionFields): HttpAction | undefined {
  const headerName = a.required('header_name');
  const descriptorKey = a.required('descriptor_key');
  if (headerName === undefined || descriptorKey === undefined) return undefined;
  return {
    type: 'request_headers',
    headerName: headerName.toLowerCase(),
    descriptorKey,
    skipIfAbsent: a.bool('skip_if_absent', false),
  };
}

function headerValueMatch(a: ActionFields): HttpAction | undefined {
  const m = valueAndMatchers(a, 'headers', 'header matchers', parseHeaderMatchers);
  if (m === undefined) return undefined;
  const { descriptorValue, matchers: headers } = m;
  return {
    type: 'header_value_match',
    descriptorKey: a.key('header_match'),
    descriptorValue,
    expectMatch: a.bool('expect_match', true),
    headers,
  };
}

function queryParameters(a: ActionFields): HttpAction | undefined {
  const parameterName = a.required('query_parameter_name');
  const descriptorKey = a.required('descriptor_key');
  if (parameterName === undefined || descriptorKey === undefined) return undefined;
  return { type: 'query_parameters', parameterName, descriptorKey, skipIfAbsent: a.bool('skip_if_absent', false) };
}

function queryParameterValueMatch(a: ActionFields): HttpAction | undefined {
  const m = valueAndMatchers(a, 'query_parameters', 'query parameter matchers', parseQueryMatchers);
  if (m === undefined) return undefined;
  const { descriptorValue, matchers: parameters } = m;
  return {
    type: 'query_parameter_value_match',
    descriptorKey: a.key('query_match'),
    descriptorValue,
    expectMatch: a.bool('expect_match', true),
    parameters,
  };
}

/** The two fields both value-match actions require: `descriptor_value` and a list of matchers (`list`). */
function valueAndMatchers<M>(
  a: ActionFields,
  list: string,
  what: string,
  parse: (r: Reader, field: Field, path: string) => M | undefined,
): { descriptorValue: string; matchers: M } | undefined {
  const descriptorValue = a.required('descriptor_value');
  const field = a.f.get(list);
  if (field === undefined) a.r.report(C.missingField, `${a.p(list)}: required (a list of ${what})`, a.at);
  const matchers = field && parse(a.r, field, a.p(list));
  if (descriptorValue === undefined || matchers === undefined) return undefined;
  return { descriptorValue, matchers };
}

/** `path: { descriptor_key?, segments? }`: the path, or its first `segments` segments. */
function pathAction(a: ActionFields): HttpAction | undefined {
  const segmentsField = a.f.get('segments');
  const segments = a.r.number(segmentsField, a.p('segments'));
  if (segmentsField && segments !== undefined && (!Number.isInteger(segments) || segments < 1)) {
    a.r.report(C.invalidValue, `${a.p('segments')}: ${segments} is not a whole number ≥ 1`, segmentsField.at);
    return undefined;
  }
  if (segmentsField && segments === undefined) return undefined;
  return { type: 'path', descriptorKey: a.key('path'), ...(segments === undefined ? {} : { segments }) };
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
