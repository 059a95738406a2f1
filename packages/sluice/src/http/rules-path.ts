/**
 * The request path of a middleware whose limits come from rules: the request's facts go to the rules engine's
 * `checkHttp`, and its verdict becomes the outcome as an inline limit's decision does. The rules themselves (the
 * `http:` section, descriptors, shadow rules) are the engine's: a middleware without `rules` bundles none of them.
 */
import type { CurrentLimit, HttpRulesVerdict } from '../rules/engine-types.js';
import { type LimitHeaderInfo, limitHeaderInfo } from './headers.js';
import type { MiddlewareSettings } from './middleware-settings.js';
import { type HttpOutcome, PASS } from './outcome.js';
import { appendInfo } from './rate-limit-info.js';
import type { HttpRequestInfo } from './request.js';
import type { Responder } from './responder.js';

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
      path: access.url(req),
      headers: access.headers(req),
      remoteAddress: ip,
      hitsAddend: cost,
    });
    if (verdict === undefined) return PASS;
    reportShadowed(s, req, ip, verdict);
    const { decision, limitName: name } = verdict;
    const own = [{ name, header: headerOf(name, verdict.limit), decision, key: undefined }];
    if (!decision.allowed) return respond.refused(req, ip, decision, name, own);
    if (shadow) return PASS;
    return respond.passed(decision, appendInfo(previousOf(req), own), undefined);
  };
}

/**
 * The header facts of each rule's limit, built once: the engine's `CurrentLimit`s are frozen and made once per
 * limit of a rule set (a reload makes new ones, and the old ones and their facts go with the old rules).
 */
const headerFacts = new WeakMap<CurrentLimit, { name: string; info: LimitHeaderInfo }>();

/** The header facts of the rule that decided, by its limit and name. */
function headerOf(name: string, current: CurrentLimit | undefined): LimitHeaderInfo {
  // Only shadow-mode rules applied: nothing in force to describe.
  if (current === undefined) return NO_LIMIT;
  let facts = headerFacts.get(current);
  if (facts?.name !== name) {
    const { limit, periodMs, algorithm } = current;
    // The algorithm and the bucket's capacity make q, r and t those of the policy, as for inline limits.
    const info = limitHeaderInfo(printable(name), periodMs, limit, 'name', {
      algorithm,
      capacity: current.burst ?? limit,
    });
    facts = { name, info };
    headerFacts.set(current, facts);
  }
  return facts.info;
}

const NO_LIMIT = limitHeaderInfo('', 1000, 0);

/** Rule names come from config files: keep what an sf-string can carry, a `?` for each other character. */
const printable = (name: string): string => name.replace(/[^\x20-\x7e]/gu, '?');

/** Rules in shadow mode never reject; their would-be rejections go to `onLimited`. */
function reportShadowed<Req>(s: MiddlewareSettings<Req>, req: Req, ip: string, verdict: HttpRulesVerdict): void {
  for (const status of verdict.shadowed) {
    if (status.decision !== undefined && !status.decision.allowed) {
      const name = status.ruleName ?? status.ruleId ?? verdict.limitName;
      s.onLimited?.({ req, ip, decision: status.decision, limitName: name, shadow: true });
    }
  }
}
