/** Matches a string (Envoy's `StringMatcher`). Exactly one of the kinds is set. */
export interface StringMatcher {
  readonly kind: 'exact' | 'prefix' | 'suffix' | 'contains' | 'regex';
  readonly value: string;
  readonly ignoreCase: boolean;
  /** Compiled for `regex` (anchored: the whole value must match, as Envoy's `safe_regex`). */
  readonly regex?: RegExp;
}

/** Matches one header (Envoy's `HeaderMatcher`). */
export interface HeaderMatcher {
  /** Lower-case header name; `:path`, `:method`, `:authority` and `:scheme` are pseudo-headers. */
  readonly name: string;
  readonly match:
    | { readonly type: 'string'; readonly matcher: StringMatcher }
    | { readonly type: 'present'; readonly present: boolean }
    | { readonly type: 'range'; readonly start: number; readonly end: number };
  readonly invert: boolean;
  readonly treatMissingAsEmpty: boolean;
}

/** Matches one query parameter (Envoy's `QueryParameterMatcher`). */
export interface QueryParameterMatcher {
  readonly name: string;
  readonly match: { readonly type: 'string'; readonly matcher: StringMatcher } | { readonly type: 'present' };
}

/** One route action: how one descriptor entry is made from a request (Envoy's `RateLimit.Action`). */
export type HttpAction =
  | { readonly type: 'remote_address' }
  | { readonly type: 'masked_remote_address'; readonly v4PrefixLen: number; readonly v6PrefixLen: number }
  | {
      readonly type: 'request_headers';
      readonly headerName: string;
      readonly descriptorKey: string;
      readonly skipIfAbsent: boolean;
    }
  | { readonly type: 'generic_key'; readonly descriptorKey: string; readonly descriptorValue: string }
  | {
      readonly type: 'header_value_match';
      readonly descriptorKey: string;
      readonly descriptorValue: string;
      readonly expectMatch: boolean;
      readonly headers: readonly HeaderMatcher[];
    }
  | {
      readonly type: 'query_parameters';
      readonly parameterName: string;
      readonly descriptorKey: string;
      readonly skipIfAbsent: boolean;
    }
  | {
      readonly type: 'query_parameter_value_match';
      readonly descriptorKey: string;
      readonly descriptorValue: string;
      readonly expectMatch: boolean;
      readonly parameters: readonly QueryParameterMatcher[];
    }
  | { readonly type: 'path'; readonly descriptorKey: string; readonly segments?: number }
  | { readonly type: 'method'; readonly descriptorKey: string };

/** One `http.rate_limits` item: its actions make one descriptor (or none, when an action does not apply). */
export interface HttpRateLimit {
  readonly actions: readonly HttpAction[];
  /** Hits the descriptor takes (Envoy's static `hits_addend.number`). */
  readonly hitsAddend?: number;
  readonly file: string;
  readonly line: number;
}

/** Header values as Node gives them: lower-case names, a string or a list of strings. */
export type HttpHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

/** What `httpDescriptorsFor` needs of an HTTP request. */
export interface RuleHttpRequest {
  method: string;
  /** The request target's path, with or without `?query`. */
  path: string;
  headers: HttpHeaders;
  /** Parsed query parameters; taken from `path` when absent. */
  query?: Readonly<Record<string, string | readonly string[] | undefined>> | URLSearchParams;
  /** The client address, already resolved (trusted proxies applied). */
  remoteAddress: string;
}

/** A descriptor made from an HTTP request, ready for `shouldRateLimit`. */
export interface HttpDescriptor {
  entries: { key: string; value: string }[];
  hitsAddend?: number;
}

/** The descriptors of one domain for an HTTP request. */
export interface HttpDomainDescriptors {
  domain: string;
  descriptors: HttpDescriptor[];
}
