/**
 * From an HTTP request to rate-limit descriptors: the `http:` section of each domain applied with Envoy's route
 * actions, for the gateway and the middleware to hand to the engine.
 */
import { formatIp, isV4, maskToPrefix, parseIp } from '../../core/ip.js';
import type { RuleSet } from '../types.js';
import { DEFAULT_PATH_FOLDING, type PathFolding } from './normalize-path.js';
import { createRequestView, matchHeader, matchQueryParameter, type RequestView } from './request-view.js';
import type { HttpAction, HttpDescriptor, HttpDomainDescriptors, HttpRateLimit, RuleHttpRequest } from './types.js';

/** An action's outcome: an entry, nothing (skipped), or no descriptor at all. */
type Outcome = { key: string; value: string } | 'skip' | 'drop';

/**
 * Turns an HTTP request into rate-limit descriptors, per domain whose file has an `http:` section, with
 * Envoy's route actions: each `rate_limits` item makes one descriptor from its actions in order, and an
 * action that cannot produce its entry (a missing header without `skip_if_absent`, a
 * `header_value_match` that does not match) drops that whole descriptor, as in Envoy. Domains that end
 * up with no descriptor are left out. The gateway and the middleware call this, then `shouldRateLimit`.
 *
 * @example
 * for (const { domain, descriptors } of httpDescriptorsFor(engine.ruleSet, {
 *   method: 'GET', path: '/api/users?page=2', headers: { 'x-api-key': 'k1' }, remoteAddress: '203.0.113.9',
 * })) await engine.shouldRateLimit({ domain, descriptors });
 */
export function httpDescriptorsFor(ruleSet: RuleSet, request: RuleHttpRequest): HttpDomainDescriptors[] {
  const out: HttpDomainDescriptors[] = [];
  // One view per path folding in use (domains usually share one: the first is kept aside, so the usual
  // request makes no map and no key string).
  let firstFolding: PathFolding | undefined;
  let firstView: RequestView | undefined;
  let views: Map<string, RequestView> | undefined;
  for (const rules of ruleSet.domains.values()) {
    if (rules.http.length === 0) continue;
    const folding = rules.pathMatching ?? DEFAULT_PATH_FOLDING;
    let view: RequestView | undefined;
    if (firstFolding === undefined) {
      firstFolding = folding;
      firstView = createRequestView(request, folding);
      view = firstView;
    } else if (sameFolding(folding, firstFolding)) view = firstView as RequestView;
    else {
      const id = `${folding.ignoreCase}/${folding.ignoreTrailingSlash}`;
      views ??= new Map();
      view = views.get(id);
      if (view === undefined) {
        view = createRequestView(request, folding);
        views.set(id, view);
      }
    }
    const descriptors: HttpDescriptor[] = [];
    for (const rateLimit of rules.http) {
      const descriptor = descriptorOf(rateLimit, view);
      if (descriptor) descriptors.push(descriptor);
    }
    if (descriptors.length > 0) out.push({ domain: rules.domain, descriptors });
  }
  return out;
}

function descriptorOf(rateLimit: HttpRateLimit, view: RequestView): HttpDescriptor | undefined {
  const entries: { key: string; value: string }[] = [];
  for (const action of rateLimit.actions) {
    const outcome = apply(action, view);
    if (outcome === 'drop') return undefined;
    if (outcome !== 'skip') entries.push(outcome);
  }
  // Envoy sends no descriptor whose actions all skipped.
  if (entries.length === 0) return undefined;
  return rateLimit.hitsAddend === undefined ? { entries } : { entries, hitsAddend: rateLimit.hitsAddend };
}

function apply(action: HttpAction, view: RequestView): Outcome {
  switch (action.type) {
    case 'remote_address': {
      const address = view.remoteAddress;
      // Already canonical (the usual IPv4 peer): no parse and format back.
      if (isCanonicalV4(address)) return { key: 'remote_address', value: address };
      const ip = parseIp(address);
      return ip ? { key: 'remote_address', value: formatIp(ip) } : 'drop';
    }
    case 'masked_remote_address': {
      const ip = parseIp(view.remoteAddress);
      if (ip === undefined) return 'drop';
      const length = isV4(ip) ? action.v4PrefixLen : action.v6PrefixLen;
      return { key: 'masked_remote_address', value: `${formatIp(maskToPrefix(ip, length))}/${length}` };
    }
    case 'request_headers': {
      const value = view.header(action.headerName)?.[0];
      if (value === undefined) return action.skipIfAbsent ? 'skip' : 'drop';
      return { key: action.descriptorKey, value };
    }
    case 'generic_key':
      return { key: action.descriptorKey, value: action.descriptorValue };
    case 'header_value_match': {
      const matched = action.headers.every((m) => matchHeader(m, view));
      return matched === action.expectMatch ? { key: action.descriptorKey, value: action.descriptorValue } : 'drop';
    }
    case 'query_parameters': {
      const value = view.query(action.parameterName)?.[0];
      if (value === undefined) return action.skipIfAbsent ? 'skip' : 'drop';
      return { key: action.descriptorKey, value };
    }
    case 'query_parameter_value_match': {
      const matched = action.parameters.every((m) => matchQueryParameter(m, view));
      return matched === action.expectMatch ? { key: action.descriptorKey, value: action.descriptorValue } : 'drop';
    }
    case 'path': {
      const path = view.pathname;
      if (action.segments === undefined) return { key: action.descriptorKey, value: path };
      const segments = path.split('/').filter((s) => s !== '');
      return { key: action.descriptorKey, value: `/${segments.slice(0, action.segments).join('/')}` };
    }
    case 'method':
      return { key: action.descriptorKey, value: view.method };
  }
}

function sameFolding(a: PathFolding, b: PathFolding): boolean {
  return a.ignoreCase === b.ignoreCase && a.ignoreTrailingSlash === b.ignoreTrailingSlash;
}

/** True for a dotted IPv4 address as `formatIp` writes it: four numbers 0-255, no leading zeros. */
function isCanonicalV4(text: string): boolean {
  let parts = 0;
  let digits = 0;
  let value = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i === text.length ? 46 /* . */ : text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || value > 255) return false;
      parts++;
      digits = 0;
      value = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && value === 0) return false; // a leading zero
      value = value * 10 + (c - 48);
      if (++digits > 3) return false;
    } else return false;
  }
  return parts === 4;
}
