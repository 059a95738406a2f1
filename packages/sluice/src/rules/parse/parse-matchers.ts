/**
 * Parsing Envoy's string, header and query parameter matchers, their regular expressions compiled to match whole
 * values.
 */
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { HeaderMatcher, QueryParameterMatcher, StringMatcher } from '../http/types.js';
import { type Field, joinPath, type Node, type Reader } from './reader.js';

const STRING_MATCHER_FIELDS = ['exact', 'prefix', 'suffix', 'contains', 'safe_regex', 'ignore_case'] as const;
const HEADER_MATCHER_FIELDS = [
  'name',
  'exact_match',
  'prefix_match',
  'suffix_match',
  'contains_match',
  'safe_regex_match',
  'present_match',
  'range_match',
  'string_match',
  'invert_match',
  'treat_missing_header_as_empty',
] as const;
const QUERY_MATCHER_FIELDS = ['name', 'string_match', 'present_match'] as const;

/** Compiles an Envoy `safe_regex` (RE2; the common subset is JavaScript's) to match a whole value. */
export function compileRegex(r: Reader, source: string, path: string, at: Node, flags = ''): RegExp | undefined {
  try {
    return new RegExp(`^(?:${source})$`, flags);
  } catch (error) {
    r.report(C.invalidValue, `${path}: '${source}' is not a valid regex (${(error as Error).message})`, at);
    return undefined;
  }
}

function regexSource(r: Reader, field: Field, path: string): string | undefined {
  const f = r.fields(field.value, path, ['regex', 'google_re2'], field.at);
  const regexField = f?.get('regex');
  if (f && regexField === undefined) r.report(C.missingField, `${path}: needs a regex`, field.at);
  return r.string(regexField, joinPath(path, 'regex'));
}

/** Validates an Envoy `StringMatcher` map. */
export function parseStringMatcher(r: Reader, field: Field, path: string): StringMatcher | undefined {
  const f = r.fields(field.value, path, STRING_MATCHER_FIELDS, field.at);
  if (f === undefined) return undefined;
  const ignoreCase = r.boolean(f.get('ignore_case'), joinPath(path, 'ignore_case')) ?? false;
  const kinds = (['exact', 'prefix', 'suffix', 'contains', 'safe_regex'] as const).filter((k) => f.has(k));
  if (kinds.length !== 1) {
    r.report(
      kinds.length === 0 ? C.missingField : C.conflictingFields,
      `${path}: give exactly one of exact, prefix, suffix, contains, safe_regex`,
      field.at,
    );
    return undefined;
  }
  const kind = kinds[0] as (typeof kinds)[number];
  const kindField = f.get(kind) as Field;
  if (kind === 'safe_regex') {
    const source = regexSource(r, kindField, joinPath(path, kind));
    if (source === undefined) return undefined;
    const regex = compileRegex(r, source, joinPath(path, kind), kindField.at, ignoreCase ? 'i' : '');
    return regex && { kind: 'regex', value: source, ignoreCase, regex };
  }
  const value = r.string(kindField, joinPath(path, kind));
  return value === undefined ? undefined : { kind, value, ignoreCase };
}

/** Validates a list of Envoy `HeaderMatcher`s. */
export function parseHeaderMatchers(r: Reader, field: Field, path: string): HeaderMatcher[] | undefined {
  const items = r.list(field, path);
  if (items === undefined) return undefined;
  const out: HeaderMatcher[] = [];
  let ok = true;
  for (const [i, item] of items.entries()) {
    const m = parseHeaderMatcher(r, item.node, item.at, `${path}[${i}]`);
    if (m) out.push(m);
    else ok = false;
  }
  return ok ? out : undefined;
}

function parseHeaderMatcher(r: Reader, node: Node | undefined, at: Node, path: string): HeaderMatcher | undefined {
  const f = r.fields(node, path, HEADER_MATCHER_FIELDS, at);
  if (f === undefined) return undefined;
  const p = (n: string) => joinPath(path, n);
  const name = r.string(f.get('name'), p('name'));
  if (!name) {
    r.report(C.missingField, `${p('name')}: a header matcher needs the header's name`, f.get('name')?.at ?? at);
    return undefined;
  }
  const invert = r.boolean(f.get('invert_match'), p('invert_match')) ?? false;
  const treatMissingAsEmpty =
    r.boolean(f.get('treat_missing_header_as_empty'), p('treat_missing_header_as_empty')) ?? false;
  const kinds = HEADER_MATCHER_FIELDS.filter(
    (k) => !['name', 'invert_match', 'treat_missing_header_as_empty'].includes(k) && f.has(k),
  );
  if (kinds.length > 1) {
    r.report(C.conflictingFields, `${path}: give at most one way to match (found ${kinds.join(', ')})`, at);
    return undefined;
  }
  const base = { name: name.toLowerCase(), invert, treatMissingAsEmpty };
  const kind = kinds[0];
  // With no way to match given, Envoy matches on the header being present.
  if (kind === undefined) return { ...base, match: { type: 'present', present: true } };
  const kindField = f.get(kind) as Field;
  switch (kind) {
    case 'present_match': {
      const present = r.boolean(kindField, p(kind));
      return present === undefined ? undefined : { ...base, match: { type: 'present', present } };
    }
    case 'range_match': {
      const rf = r.fields(kindField.value, p(kind), ['start', 'end'], kindField.at);
      const start = r.number(rf?.get('start'), p('range_match.start'));
      const end = r.number(rf?.get('end'), p('range_match.end'));
      if (rf && (start === undefined || end === undefined)) {
        if (!rf.has('start') || !rf.has('end')) {
          r.report(C.missingField, `${p(kind)}: needs start and end (end exclusive)`, kindField.at);
        }
        return undefined;
      }
      return start === undefined || end === undefined ? undefined : { ...base, match: { type: 'range', start, end } };
    }
    case 'string_match': {
      const matcher = parseStringMatcher(r, kindField, p(kind));
      return matcher && { ...base, match: { type: 'string', matcher } };
    }
    case 'safe_regex_match': {
      const source = regexSource(r, kindField, p(kind));
      const regex = source === undefined ? undefined : compileRegex(r, source, p(kind), kindField.at);
      return source === undefined || regex === undefined
        ? undefined
        : { ...base, match: { type: 'string', matcher: { kind: 'regex', value: source, ignoreCase: false, regex } } };
    }
    default: {
      const value = r.string(kindField, p(kind));
      const stringKind = kind.replace('_match', '') as 'exact' | 'prefix' | 'suffix' | 'contains';
      return value === undefined
        ? undefined
        : { ...base, match: { type: 'string', matcher: { kind: stringKind, value, ignoreCase: false } } };
    }
  }
}

/** Validates a list of Envoy `QueryParameterMatcher`s. */
export function parseQueryMatchers(r: Reader, field: Field, path: string): QueryParameterMatcher[] | undefined {
  const items = r.list(field, path);
  if (items === undefined) return undefined;
  const out: QueryParameterMatcher[] = [];
  let ok = true;
  for (const [i, item] of items.entries()) {
    const itemPath = `${path}[${i}]`;
    const f = r.fields(item.node, itemPath, QUERY_MATCHER_FIELDS, item.at);
    if (f === undefined) {
      ok = false;
      continue;
    }
    const name = r.string(f.get('name'), joinPath(itemPath, 'name'));
    if (!name) {
      r.report(C.missingField, `${itemPath}.name: a query parameter matcher needs a name`, item.at);
      ok = false;
      continue;
    }
    const stringField = f.get('string_match');
    if (stringField && f.has('present_match')) {
      r.report(C.conflictingFields, `${itemPath}: give string_match or present_match, not both`, item.at);
      ok = false;
      continue;
    }
    if (stringField) {
      const matcher = parseStringMatcher(r, stringField, joinPath(itemPath, 'string_match'));
      if (matcher) out.push({ name, match: { type: 'string', matcher } });
      else ok = false;
    } else {
      r.boolean(f.get('present_match'), joinPath(itemPath, 'present_match'));
      out.push({ name, match: { type: 'present' } });
    }
  }
  return ok ? out : undefined;
}
