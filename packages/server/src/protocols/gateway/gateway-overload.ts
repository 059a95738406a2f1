/**
 * The gateway's overload control (`sluice serve --upstream … --adaptive ALG`): an admitted request takes
 * a place in the upstream's adaptive limit or is answered 503 with `Retry-After` before it reaches the
 * upstream's queue; its place comes back when the response is done (a 5xx or an unfinished one counts
 * as dropped). The rules' `http.priorities` name the priority a route's requests take (critical, normal,
 * batch); a request no route names is batch, shed first.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdaptiveLimiter } from 'sluice/adaptive';
import { DEFAULT_PATH_FOLDING, foldPath, type RuleSet } from 'sluice/rules';
import { errorAnswer, type GatewayAnswer } from './gateway-answer.js';

/** Takes a place for the request behind `res`, or answers what to send instead (503). */
export function takeUpstreamPlace(
  limiter: AdaptiveLimiter,
  req: IncomingMessage,
  res: ServerResponse,
  ruleSet: RuleSet,
  target: string,
): GatewayAnswer | undefined {
  const priority = priorityOf(ruleSet, req.method, target);
  const permit = limiter.tryAcquire(limiter.priorities.includes(priority) ? { priority } : {});
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
 * The priority of the first `http.priorities` route (file by file, in order) that the request is on; else batch.
 * `target` is the admitted one — its path normalised, as the rules see it and the upstream gets it — so that
 * `/pay/../report` is not taken for a request on `/pay`; the domain's `path_matching` folding applies as to rules.
 */
export function priorityOf(ruleSet: RuleSet, method: string | undefined, target: string): string {
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
  return 'batch';
}
