/** Parsing `http.priorities`: which priority of the gateway's adaptive limit (`--adaptive`) a route's requests take. */
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { PriorityRoute } from '../types.js';
import type { Field, Reader } from './reader.js';

/** The gateway's priorities, most important first; a request no route names takes the least important. */
export const GATEWAY_PRIORITIES = ['critical', 'normal', 'batch'] as const;
/** Most `http.priorities` entries in one file (each request walks them). */
export const MAX_PRIORITY_ROUTES = 256;
const METHOD = /^[A-Z]{1,16}$/;

/** `http.priorities: [{ path_prefix: /pay, method?: POST, priority: critical }]`; undefined when absent. */
export function parsePriorityRoutes(r: Reader, field: Field | undefined): PriorityRoute[] | undefined {
  if (field?.value === undefined) return undefined;
  const items = r.list(field, 'http.priorities') ?? [];
  if (items.length > MAX_PRIORITY_ROUTES) {
    r.report(C.invalidValue, `http.priorities: ${items.length} entries, at most ${MAX_PRIORITY_ROUTES}`, field.at);
    return undefined;
  }
  const out: PriorityRoute[] = [];
  for (const [i, item] of items.entries()) {
    const path = `http.priorities[${i}]`;
    const f = r.fields(item.node, path, ['path_prefix', 'method', 'priority'], item.at);
    if (f === undefined) continue;
    const prefix = r.string(f.get('path_prefix'), `${path}.path_prefix`);
    const method = r.string(f.get('method'), `${path}.method`)?.toUpperCase();
    const priority = r.string(f.get('priority'), `${path}.priority`);
    let ok = true;
    if (prefix === undefined || !prefix.startsWith('/') || prefix.length > 1024) {
      if (prefix !== undefined || !f.has('path_prefix'))
        r.report(
          C.invalidValue,
          `${path}.path_prefix: required, a path starting with / (at most 1024 characters)`,
          f.get('path_prefix')?.at ?? item.at,
        );
      ok = false;
    }
    if (method !== undefined && !METHOD.test(method)) {
      r.report(
        C.invalidValue,
        `${path}.method: ${JSON.stringify(method)} is not an HTTP method`,
        f.get('method')?.at ?? item.at,
      );
      ok = false;
    }
    if (!GATEWAY_PRIORITIES.includes(priority as PriorityRoute['priority'])) {
      if (priority !== undefined || !f.has('priority'))
        r.report(
          C.invalidValue,
          `${path}.priority: use ${GATEWAY_PRIORITIES.join(', ')}`,
          f.get('priority')?.at ?? item.at,
        );
      ok = false;
    }
    if (!ok) continue;
    const { line } = r.position(item.at);
    out.push({
      pathPrefix: prefix as string,
      ...(method === undefined ? {} : { method }),
      priority: priority as PriorityRoute['priority'],
      file: r.file,
      line,
    });
  }
  return out;
}
