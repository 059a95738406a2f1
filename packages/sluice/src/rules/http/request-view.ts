/**
 * An HTTP request as the `http:` actions read it (method, normalised path, headers, query parameters, each parsed on
 * first use), and Envoy's string, header and query parameter matchers over it.
 */
import { DEFAULT_PATH_FOLDING, foldPath, normalizePath, type PathFolding } from './normalize-path.js';
import type { HeaderMatcher, QueryParameterMatcher, RuleHttpRequest, StringMatcher } from './types.js';

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
export function createRequestView(request: RuleHttpRequest, folding: PathFolding = DEFAULT_PATH_FOLDING): RequestView {
  return new HttpRequestView(request, folding);
}

/** A {@link RequestView}: one object per request, its header and query lookups made on first use. */
class HttpRequestView implements RequestView {
  readonly method: string;
  readonly pathname: string;
  readonly remoteAddress: string;
  private readonly raw: string;
  private readonly q: number;
  private readonly path: string;
  private params: URLSearchParams | undefined;
  private lowerHeaders: Map<string, string | readonly string[] | undefined> | undefined;

  constructor(
    private readonly request: RuleHttpRequest,
    folding: PathFolding,
  ) {
    const raw = String(request.path ?? '');
    const q = raw.indexOf('?');
    const rawPathname = q === -1 ? raw : raw.slice(0, q);
    this.raw = raw;
    this.q = q;
    this.pathname = foldPath(normalizePath(rawPathname) ?? rawPathname, folding);
    this.path = q === -1 ? this.pathname : this.pathname + raw.slice(q);
    this.method = String(request.method ?? '').toUpperCase();
    this.remoteAddress = String(request.remoteAddress ?? '');
  }

  private rawHeader(name: string): string | readonly string[] | undefined {
    const headers = this.request.headers ?? {};
    const direct = headers[name];
    if (direct !== undefined) return direct;
    // Node lower-cases header names; other callers may not.
    this.lowerHeaders ??= new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    return this.lowerHeaders.get(name);
  }

  private queryParams(): URLSearchParams {
    if (this.params) return this.params;
    const given = this.request.query;
    let params: URLSearchParams;
    if (given instanceof URLSearchParams) params = given;
    else if (given !== undefined) {
      params = new URLSearchParams();
      for (const [k, v] of Object.entries(given)) {
        if (v === undefined) continue;
        for (const one of typeof v === 'string' ? [v] : v) params.append(k, one);
      }
    } else params = new URLSearchParams(this.q === -1 ? '' : this.raw.slice(this.q + 1));
    this.params = params;
    return params;
  }

  header(name: string): readonly string[] | undefined {
    // Envoy's pseudo-headers, so matchers written for Envoy work unchanged.
    if (name === ':path') return [this.path];
    if (name === ':method') return [this.method];
    const v = this.rawHeader(name === ':authority' ? 'host' : name);
    if (v === undefined) return undefined;
    return typeof v === 'string' ? [v] : v.length === 0 ? undefined : v;
  }

  query(name: string): readonly string[] | undefined {
    const all = this.queryParams().getAll(name);
    return all.length === 0 ? undefined : all;
  }
}

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
