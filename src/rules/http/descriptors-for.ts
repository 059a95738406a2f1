import type { RuleSet } from '../types.js';
import type { HttpDomainDescriptors, HttpRequestInfo } from './types.js';

/** Turns an HTTP request into descriptors per domain with an `http:` section (work in progress). */
export function httpDescriptorsFor(_ruleSet: RuleSet, _request: HttpRequestInfo): HttpDomainDescriptors[] {
  return [];
}
