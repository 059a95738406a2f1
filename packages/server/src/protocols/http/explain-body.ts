/**
 * The body of `POST /admin/explain`, checked: envoy descriptors (`{"domain","descriptors"}` as `/json` takes them), a
 * `/v1/check` body (`{"checks":[...]}`), or an HTTP request for the gateway's rules (`{"http":{method,path,headers}}`).
 */
import { isSluiceError } from 'sluice';
import type { RateLimitRequest, RuleHttpRequest } from 'sluice/rules';
import { isRequestError } from 'sluice/rules';
import { assertRequestLengths, requestFromMessage } from '../../rls/codec.js';
import { MAX_CHECKS } from './check-api.js';
import { HttpError, isObject } from './respond.js';

/** Longest method name, path and header value an explained HTTP request may have, in characters. */
export const MAX_EXPLAIN_METHOD = 32;
export const MAX_EXPLAIN_PATH = 8192;
export const MAX_EXPLAIN_HEADER_VALUE = 8192;
/** Most headers an explained HTTP request may carry. */
export const MAX_EXPLAIN_HEADERS = 100;

/** What is to be explained. */
export type ExplainBody =
  | { readonly kind: 'envoy'; readonly request: RateLimitRequest }
  | { readonly kind: 'checks'; readonly checks: readonly unknown[] }
  | { readonly kind: 'http'; readonly request: RuleHttpRequest };

const CODE = 'ERR_SLUICE_EXPLAIN_INVALID';

function invalid(message: string): HttpError {
  return new HttpError(400, CODE, message);
}

/** Reads an explain body; throws a 400 with a code naming what is wrong. */
export function parseExplainBody(body: unknown): ExplainBody {
  if (!isObject(body)) throw invalid('expected a JSON object: {"domain","descriptors"}, {"checks"} or {"http"}');
  const kinds = ['domain' in body, 'checks' in body, 'http' in body].filter(Boolean).length;
  if (kinds !== 1) throw invalid('give exactly one of "domain" (with "descriptors"), "checks" or "http"');
  if ('checks' in body) {
    const { checks } = body;
    if (!Array.isArray(checks) || checks.length === 0) throw invalid('checks: expected a non-empty list');
    if (checks.length > MAX_CHECKS) {
      throw new HttpError(400, 'ERR_SLUICE_TOO_MANY_ITEMS', `checks: at most ${MAX_CHECKS}, got ${checks.length}`);
    }
    return { kind: 'checks', checks };
  }
  if ('http' in body) return { kind: 'http', request: httpRequestOf(body.http) };
  try {
    const request = requestFromMessage(body);
    assertRequestLengths(request);
    return { kind: 'envoy', request };
  } catch (error) {
    if (isSluiceError(error) || isRequestError(error)) throw new HttpError(400, error.code, error.message);
    throw error;
  }
}

function httpRequestOf(value: unknown): RuleHttpRequest {
  if (!isObject(value)) throw invalid('http: expected {"method","path","headers"?,"remoteAddress"?}');
  const method = text(value.method, 'http.method', MAX_EXPLAIN_METHOD);
  if (!/^[A-Za-z]+$/.test(method)) throw invalid('http.method: expected an HTTP method such as GET');
  const path = text(value.path, 'http.path', MAX_EXPLAIN_PATH);
  if (!path.startsWith('/')) throw invalid('http.path: expected an origin-form target starting with /');
  const remoteAddress = value.remoteAddress === undefined ? '' : text(value.remoteAddress, 'http.remoteAddress', 64);
  const headers: Record<string, string> = {};
  if (value.headers !== undefined) {
    if (!isObject(value.headers)) throw invalid('http.headers: expected an object of header names to strings');
    const names = Object.keys(value.headers);
    if (names.length > MAX_EXPLAIN_HEADERS) {
      throw new HttpError(400, 'ERR_SLUICE_TOO_MANY_ITEMS', `http.headers: at most ${MAX_EXPLAIN_HEADERS}`);
    }
    for (const name of names) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/.test(name))
        throw invalid('http.headers: a header name is not a token');
      headers[name.toLowerCase()] = text(value.headers[name], `http.headers.${name}`, MAX_EXPLAIN_HEADER_VALUE);
    }
  }
  return { method: method.toUpperCase(), path, headers, remoteAddress };
}

function text(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string' || value === '' || value.length > max) {
    throw invalid(`${field}: expected a non-empty string of at most ${max} characters`);
  }
  return value;
}
