/**
 * The gateway's overload control (`sluice serve --upstream … --adaptive ALG`): an admitted request takes
 * a place in the upstream's adaptive limit or is answered 503 with `Retry-After` before it reaches the
 * upstream's queue; its place comes back when the response is done (a 5xx or an unfinished one counts
 * as dropped). The rules' `http.priorities` name the priority a route's requests take (critical, normal,
 * batch); a request no route names is batch, shed first.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdaptiveLimiter } from 'sluice/adaptive';
import type { RuleSet } from 'sluice/rules';
import { errorAnswer, type GatewayAnswer } from './gateway-answer.js';

/** Takes a place for the request behind `res`, or answers what to send instead (503). */
export function takeUpstreamPlace(
  limiter: AdaptiveLimiter,
  req: IncomingMessage,
  res: ServerResponse,
  ruleSet: RuleSet,
): GatewayAnswer | undefined {
  const priority = priorityOf(ruleSet, req);
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

/** The priority of the first `http.priorities` route (file by file, in order) that `req` is on; else batch. */
export function priorityOf(ruleSet: RuleSet, req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  for (const rules of ruleSet.domains.values()) {
    for (const route of rules.priorityRoutes ?? []) {
      if ((route.method === undefined || route.method === req.method) && path.startsWith(route.pathPrefix))
        return route.priority;
    }
  }
  return 'batch';
}
