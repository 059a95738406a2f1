/**
 * The request path of a middleware whose limits come from rules: the request's facts go to the rules' check, and its
 * verdict becomes the outcome as an inline limit's decision does.
 */
import type { MiddlewareSettings } from './middleware-settings.js';
import { type HttpOutcome, PASS } from './outcome.js';
import { appendInfo } from './rate-limit-info.js';
import type { HttpRequestInfo } from './request.js';
import type { Responder } from './responder.js';
import type { RulesVerdict } from './rules-check.js';

/** Decides a request by rules. */
export type RulesPath<Req> = (req: Req, ip: string, info: HttpRequestInfo) => Promise<HttpOutcome>;

/** Creates the rules path of a middleware with settings `s` (which has `rulesCheck`). */
export function createRulesPath<Req>(
  s: MiddlewareSettings<Req>,
  respond: Responder<Req>,
  check: NonNullable<MiddlewareSettings<Req>['rulesCheck']>,
): RulesPath<Req> {
  const { access, costFn, fixedCost, shadow, previousOf } = s;
  return async (req, ip, info) => {
    const cost = costFn === undefined ? (fixedCost?.cost ?? 1) : await costFn(req, info);
    const verdict = await check({
      method: access.method(req),
      url: access.url(req),
      headers: access.headers(req),
      ip,
      cost,
    });
    if (verdict === undefined) return PASS;
    reportShadowed(s, req, ip, verdict);
    const { decision, limitName: name } = verdict;
    const own = [{ name, header: verdict.header, decision, key: undefined }];
    if (!decision.allowed) return respond.refused(req, ip, decision, name, own);
    if (shadow) return PASS;
    return respond.passed(decision, appendInfo(previousOf(req), own), undefined);
  };
}

/** Rules in shadow mode never reject; their would-be rejections go to `onLimited`. */
function reportShadowed<Req>(s: MiddlewareSettings<Req>, req: Req, ip: string, verdict: RulesVerdict): void {
  for (const status of verdict.shadowed) {
    if (status.decision !== undefined && !status.decision.allowed) {
      const name = status.ruleName ?? status.ruleId ?? verdict.limitName;
      s.onLimited?.({ req, ip, decision: status.decision, limitName: name, shadow: true });
    }
  }
}
