/**
 * Settling a decision: the rules engine's response becomes the service's answer — a decision event per
 * descriptor (for metrics and the dashboard), the binding decision, and the rate-limit headers.
 */
import type { Decision } from 'sluice';
import { combineDecisions } from 'sluice';
import type { PolicyFacts } from 'sluice/http';
import type { CurrentLimit, DescriptorStatus, RateLimitRequest, RateLimitResponse, RulesEngine } from 'sluice/rules';
import type { DecisionEvent, DecisionHub, DecisionOutcome, DecisionSource } from '../observability/decision-events.js';
import { NEAR_LIMIT_RATIO, outcomeOf, UNKNOWN_DOMAIN } from '../observability/decision-events.js';
import type { ListName } from './access-lists.js';
import { dynamicMetadata } from './dynamic-metadata.js';
import { type EnvoyHeaderNames, envoyHeaders } from './envoy-response-headers.js';
import { rateLimitHeaders } from './rate-limit-headers.js';

/** The answer to a rate-limit request, with the headers that describe it. */
export interface Decided extends RateLimitResponse {
  /** The rate-limit headers (docs/middleware.md) of the status closest to exhaustion (empty when no limit applied). */
  headers: Record<string, string>;
  /** The binding decision the headers describe, when a limit applied. */
  binding?: Decision;
  /** envoy ratelimit's `dynamic_metadata`, with `dynamicMetadata: true`. */
  dynamicMetadata?: Record<string, unknown>;
}

/**
 * Which rate-limit headers a response carries: sluice's (docs/service.md: `X-RateLimit-*`, `RateLimit-Policy`,
 * `RateLimit`, `Retry-After`), none, or envoy ratelimit's three (`LIMIT_RESPONSE_HEADERS_ENABLED`).
 */
export type ResponseHeaderStyle = 'sluice' | 'none' | EnvoyHeaderNames;

/** What settling needs (the decider's options). */
export interface SettleOptions {
  engine: RulesEngine;
  hub: DecisionHub;
  now: () => number;
  /** @default 'sluice' */
  headers?: ResponseHeaderStyle;
  /** Add envoy ratelimit's `dynamic_metadata` to every response. @default false */
  dynamicMetadata?: boolean;
  /** Share of a limit used past which an allowed decision counts as `near_limit`. @default NEAR_LIMIT_RATIO */
  nearLimitRatio?: number;
}

/** A deny entry's decision. */
const DENIED_BINDING: Decision = {
  allowed: false,
  limit: 0,
  remaining: 0,
  resetMs: 0,
  retryAfterMs: Number.POSITIVE_INFINITY,
  reason: 'denied',
};

/** Turns the engine's response to `request` into the service's answer; `marks`: each descriptor's list entry. */
export type Settle = (
  request: RateLimitRequest,
  response: RateLimitResponse,
  marks: (ListName | undefined)[] | undefined,
  source: DecisionSource,
) => Decided;

/** See {@link Settle}. */
export function createSettle(options: SettleOptions): Settle {
  const { engine, hub, now } = options;
  const headerMode = options.headers ?? 'sluice';
  const nearLimitRatio = options.nearLimitRatio ?? NEAR_LIMIT_RATIO;
  return (request, response, marks, source) => {
    const atMs = now();
    // Listeners label and key by domain: only the rules' domains are let through as they are.
    const domain = engine.ruleSet.domains.has(request.domain) ? request.domain : UNKNOWN_DOMAIN;
    // The binding decision so far and the status it came from (its name and window go in the headers).
    let binding: Decision | undefined;
    let bindingAt = -1;
    // envoy's global shadow mode: statuses stay OVER_LIMIT but the request passed; count them as shadow.
    const globalShadow = response.shadowed === true;
    const statuses = response.statuses;
    for (let i = 0; i < statuses.length; i++) {
      const status = statuses[i] as DescriptorStatus;
      const shadow = status.shadow === true || (globalShadow && status.code === 'OVER_LIMIT');
      const outcome: DecisionOutcome = shadow
        ? 'shadow'
        : status.code === 'OVER_LIMIT'
          ? 'over_limit'
          : outcomeOf(true, status.currentLimit?.limit, status.limitRemaining, nearLimitRatio);
      hub.emit(eventOf(source, domain, request, i, status, outcome, atMs, marks?.[i]));
      const decision = status.decision;
      if (decision !== undefined && !shadow) {
        // Pairwise: combineDecisions over all of them picks the same one, without an array per request.
        const combined = binding === undefined ? decision : combineDecisions([binding, decision]);
        if (combined === decision || binding === undefined) {
          binding = combined;
          bindingAt = i;
        }
      }
    }
    // A deny entry decides the request, whatever the looked-at limits say.
    const denied = marks?.includes('deny') === true;
    if (denied) binding = DENIED_BINDING;
    const headers =
      headerMode === 'sluice'
        ? binding === undefined
          ? {}
          : denied
            ? rateLimitHeaders(binding, 'denied', 1000)
            : headersOf(binding, statuses[bindingAt] as DescriptorStatus, request.domain)
        : headerMode === 'none'
          ? {}
          : envoyHeaders(response.statuses, headerMode);
    const overallCode = response.overallCode;
    const decided: Decided =
      binding === undefined ? { overallCode, statuses, headers } : { overallCode, statuses, headers, binding };
    if (options.dynamicMetadata === true) decided.dynamicMetadata = dynamicMetadata(request, response.statuses);
    return decided;
  };
}

/** The policy facts of a current limit (shared by its statuses, so kept per limit: nothing allocated per decision). */
const FACTS = new WeakMap<CurrentLimit, PolicyFacts>();
function factsOf(limit: CurrentLimit): PolicyFacts {
  let facts = FACTS.get(limit);
  if (facts === undefined) {
    facts = { algorithm: limit.algorithm, capacity: limit.burst ?? limit.limit };
    FACTS.set(limit, facts);
  }
  return facts;
}

/** sluice's rate-limit headers for the binding decision, named and windowed by the status it came from. */
function headersOf(binding: Decision, status: DescriptorStatus, domain: string): Record<string, string> {
  const limit = status.currentLimit;
  const name = status.ruleName ?? limit?.name ?? status.ruleId ?? domain;
  if (limit === undefined) return rateLimitHeaders(binding, name, 1000);
  return rateLimitHeaders(binding, name, limit.periodMs, factsOf(limit));
}

/** The decision event of descriptor `i`. */
function eventOf(
  source: DecisionSource,
  domain: string,
  request: RateLimitRequest,
  i: number,
  status: DescriptorStatus,
  outcome: DecisionOutcome,
  atMs: number,
  list: ListName | undefined,
): DecisionEvent {
  const descriptor = request.descriptors[i];
  const rule = status.ruleId ?? '';
  const key = descriptor === undefined ? '' : keyOf(descriptor.entries);
  const limit = status.currentLimit;
  // One literal per shape, fields in the same order (no spreads, and no fields added to a built
  // object, which would cost it a second backing store): this runs for every decision.
  const event: { -readonly [K in keyof DecisionEvent]: DecisionEvent[K] } =
    limit === undefined
      ? { source, domain, rule, key, outcome, atMs }
      : {
          source,
          domain,
          rule,
          key,
          outcome,
          atMs,
          limit: limit.limit,
          remaining: status.limitRemaining,
          resetMs: status.durationUntilResetMs,
        };
  if (list !== undefined) event.list = list;
  if (status.metricKey !== undefined) event.metricKey = status.metricKey;
  return event;
}

/** A descriptor as one string, `k=v/k=v`, for stats and logs. */
function keyOf(entries: readonly { key: string; value: string }[]): string {
  if (entries.length === 1) {
    const e = entries[0] as { key: string; value: string };
    return `${e.key}=${e.value}`;
  }
  let out = '';
  for (const e of entries) out += out === '' ? `${e.key}=${e.value}` : `/${e.key}=${e.value}`;
  return out;
}
