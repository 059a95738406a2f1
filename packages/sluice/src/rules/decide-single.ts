/**
 * The rules engine's fast path: one descriptor matched to a rule with enforced limits and nothing that needs the
 * general path, decided with no plan list, no entry lists and no closures (this runs for most decisions).
 */
import type { Decision } from '../core/decision.js';
import type { MaybePromise } from '../stores/store.js';
import { type EngineContext, itemsOf, type Limited, respond } from './engine-context.js';
import type { RateLimitRequest, RateLimitResponse, RequestDescriptor } from './engine-types.js';
import { matchDescriptor } from './match.js';
import { validateSingle } from './request.js';
import { limitedStatus, noLimitStatus, unlimitedStatus } from './status.js';

/**
 * The usual request — one descriptor, matched to a rule with enforced limits and nothing that needs the
 * general path (no `limit` override, shadow, quota or `replaces`) — decided in fewer allocations, with the
 * same answer as the general path. Undefined when the request needs the general path.
 */
export function decideSingle(
  context: EngineContext,
  request: RateLimitRequest,
): MaybePromise<RateLimitResponse> | undefined {
  const cost = validateSingle(request);
  const descriptor = request.descriptors[0] as RequestDescriptor;
  if (context.globalQuota || (descriptor.limit !== undefined && descriptor.limit !== null)) return undefined;
  const rules = context.ruleSet.domains.get(request.domain);
  const match = rules === undefined ? undefined : matchDescriptor(rules, descriptor.entries);
  if (match === undefined) return respond(context, [noLimitStatus()], false);
  const node = match.node;
  if (node.replaces.length > 0 || node.shadow || node.quotaMode) return undefined;
  if (node.unlimited) return respond(context, [unlimitedStatus(node.id)], false);
  if (node.limits.length === 0) return respond(context, [noLimitStatus()], false);
  const plan: Limited = {
    kind: 'limited',
    node,
    limits: node.limits,
    key: match.key,
    cost,
    shadow: false,
    fail: node.fail,
    entries: descriptor.entries,
  };
  const nowMs = context.clock.now();
  const checked = context.failover.check(itemsOf(plan), nowMs, true);
  if (checked instanceof Promise)
    return checked.then((decisions) => settleSingle(context, plan, decisions, nowMs, request.domain));
  return settleSingle(context, plan, checked, nowMs, request.domain);
}

function settleSingle(
  context: EngineContext,
  plan: Limited,
  decisions: readonly Decision[],
  nowMs: number,
  domain: string,
): RateLimitResponse {
  const status = limitedStatus(plan, decisions, nowMs, false, domain);
  return respond(context, [status], status.code === 'OVER_LIMIT');
}
