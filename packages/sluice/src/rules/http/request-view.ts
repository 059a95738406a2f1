import { DEFAULT_PATH_FOLDING, foldPath, normalizePath, type PathFolding } from './normalize-path.js';
import type { HeaderMatcher, HttpRequestInfo, QueryParameterMatcher, StringMatcher } from './types.js';

/** A request as the actions read it: headers (with pseudo-headers) and query parameters as lists. */
export interface RequestView {
  readonly method: string;
  /** The path without its query string. */
  readonly pathname: string;
  readonly remoteAddress: string;
  /** All values of a header (lower-case name), or undefined when absent. */
  header(name: string): readonly string[] | undefined;
  /** All values of a query parameter, or undefined when absent. */
  query(name: string): readonly string[] | undefined;
}

/**
 * Wraps request info; the query string is parsed only if an action asks for it. The path is normalised
 * (`normalizePath`) and folded (`folding`) first, so actions and `:path` matchers see one spelling of it.
 */
export function createRequestView(request: HttpRequestInfo, folding: PathFolding = DEFAULT_PATH_FOLDING): RequestView {
  const raw = String(request.path ?? '');
  const q = raw.indexOf('?');
  const rawPathname = q === -1 ? raw : raw.slice(0, q);
  const pathname = foldPath(normalizePath(rawPathname) ?? rawPathname, folding);
  const path = q === -1 ? pathname : pathname + raw.slice(q);
  const method = String(request.method ?? '').toUpperCase();
  let params: URLSearchParams | undefined;
  let lowerHeaders: Map<string, string | readonly string[] | undefined> | undefined;

  function rawHeader(name: string): string | readonly string[] | undefined {
    const headers = request.headers ?? {};
    const direct = headers[name];
    if (direct !== undefined) return direct;
    // Node lower-cases header names; other callers may not.
    if (lowerHeaders === undefined) {
      lowerHeaders = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    }
    return lowerHeaders.get(name);
  }

  function queryParams(): URLSearchParams {
    if (params) return params;
    const given = request.query;
    if (given instanceof URLSearchParams) params = given;
    else if (given !== undefined) {
      params = new URLSearchParams();
      for (const [k, v] of Object.entries(given)) {
        if (v === undefined) continue;
        for (const one of typeof v === 'string' ? [v] : v) params.append(k, one);
      }
    } else params = new URLSearchParams(q === -1 ? '' : raw.slice(q + 1));
    return params;
  }

  return {
    method,
    pathname,
    remoteAddress: String(request.remoteAddress ?? ''),
    header(name) {
      // Envoy's pseudo-headers, so matchers written for Envoy work unchanged.
      if (name === ':path') return [path];
      if (name === ':method') return [method];
      if (name === ':authority') name = 'host';
      const v = rawHeader(name);
      if (v === undefined) return undefined;
      return typeof v === 'string' ? [v] : v.length === 0 ? undefined : v;
    },
    query(name) {
      const all = queryParams().getAll(name);
      return all.length === 0 ? undefined : all;
    },
  };
}

/** Envoy's StringMatcher. */
export function matchString(m: StringMatcher, value: string): boolean {
  if (m.kind === 'regex') return (m.regex as RegExp).test(value);
  const v = m.ignoreCase ? value.toLowerCase() : value;
  const want = m.ignoreCase ? m.value.toLowerCase() : m.value;
  switch (m.kind) {
    case 'exact':
      return v === want;
    case 'prefix':
      return v.startsWith(want);
    case 'suffix':
      return v.endsWith(want);
    default:
      return v.includes(want);
  }
}

/**
 * Envoy's HeaderMatcher. Several values of one header are matched as one comma-joined value, as Envoy
 * does. An absent header matches only `present_match: false` (or, with `treat_missing_header_as_empty`,
 * is matched as ""); `invert_match` inverts the result either way.
 */
export function matchHeader(m: HeaderMatcher, view: RequestView): boolean {
  const values = view.header(m.name);
  let matched: boolean;
  if (values === undefined && !m.treatMissingAsEmpty) {
    matched = m.match.type === 'present' && !m.match.present;
  } else {
    const value = values === undefined ? '' : values.join(',');
    switch (m.match.type) {
      case 'present':
        matched = m.match.present;
        break;
      case 'range': {
        const n = /^-?\d+$/.test(value) ? Number(value) : Number.NaN;
        matched = n >= m.match.start && n < m.match.end;
        break;
      }
      default:
        matched = matchString(m.match.matcher, value);
    }
  }
  return m.invert ? !matched : matched;
}

/** Envoy's QueryParameterMatcher: present, or the (first) value matching a string matcher. */
export function matchQueryParameter(m: QueryParameterMatcher, view: RequestView): boolean {
  const value = view.query(m.name)?.[0];
  if (value === undefined) return false;
  return m.match.type === 'present' || matchString(m.match.matcher, value);
}
