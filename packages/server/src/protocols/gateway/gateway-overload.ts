/**
 * The gateway's overload control (`sluice serve --upstream … --adaptive ALG`): an admitted request takes
 * a place in the upstream's adaptive limit or is answered 503 with `Retry-After` before it reaches the
 * upstream's queue; its place comes back when the response is done (a 5xx or an unfinished one counts
 * as dropped). The rules' `http.priorities` name the priority a route's requests take (critical, normal,
 * batch, or the rules' own `http.adaptive.priorities`); a request no route names takes the least important,
 * shed first.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_PATH_FOLDING, foldPath, type RuleSet } from 'sluice/rules';
import type { GatewayAdaptive } from './adaptive-limit.js';
import { errorAnswer, type GatewayAnswer } from './gateway-answer.js';

/** Takes a place for the request behind `res`, or answers what to send instead (503). */
export function takeUpstreamPlace(
  limiter: GatewayAdaptive,
  req: IncomingMessage,
  res: ServerResponse,
  ruleSet: RuleSet,
  target: string,
): GatewayAnswer | undefined {
  const permit = limiter.take(ruleSet, priorityOf(ruleSet, req.method, target));
  if (!permit.allowed) {
    const seconds = Math.max(1, Math.ceil(permit.retryAfterMs / 1000));
    return errorAnswer(
      503,
      'OVERLOADED',
      `The upstream is at its current concurrency limit (${permit.limit}); retry in ${seconds} second${seconds === 1 ? '' : 's'}.`,
      { 'retry-after': String(seconds) },
    );
  }
  // 'close' follows 'finish' on every response, and comes alone when the client or upstream went away.
  res.once('close', () => permit.release(res.writableFinished && res.statusCode < 500 ? 'success' : 'dropped'));
  return undefined;
}

/**
 * The priority of the first `http.priorities` route (file by file, in order) that the request is on; else
 * undefined (the least important).
 * `target` is the admitted one — its path normalised, as the rules see it and the upstream gets it — so that
 * `/pay/../report` is not taken for a request on `/pay`; the domain's `path_matching` folding applies as to rules.
 */
export function priorityOf(ruleSet: RuleSet, method: string | undefined, target: string): string | undefined {
  const q = target.indexOf('?');
  const path = q === -1 ? target : target.slice(0, q);
  for (const rules of ruleSet.domains.values()) {
    const routes = rules.priorityRoutes;
    if (routes === undefined || routes.length === 0) continue;
    const folding = rules.pathMatching ?? DEFAULT_PATH_FOLDING;
    const folded = foldPath(path, folding);
    for (const route of routes) {
      if (
        (route.method === undefined || route.method === method) &&
        folded.startsWith(foldPath(route.pathPrefix, folding))
      )
        return route.priority;
    }
  }
  return undefined;
}
