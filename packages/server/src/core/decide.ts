import { performance } from 'node:perf_hooks';
import type { Decision } from 'sluice';
import { combineDecisions, isSluiceError } from 'sluice';
import type { DescriptorStatus, RateLimitRequest, RateLimitResponse, RulesEngine } from 'sluice/rules';
import type { DecisionEvent, DecisionHub, DecisionOutcome, DecisionSource } from '../observability/decision-events.js';
import { NEAR_LIMIT_RATIO, outcomeOf, UNKNOWN_DOMAIN } from '../observability/decision-events.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { Carrier } from '../observability/tracing/trace-context.js';
import type { AccessLists, ListName } from './access-lists.js';
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

/** Decides envoy-style requests: allow/deny lists first, then the rules engine; publishes every decision. */
export interface Decider {
  /** `carrier`: the call's headers (gRPC metadata or HTTP headers), read only for tracing. */
  decide(request: RateLimitRequest, source: DecisionSource, carrier?: Carrier): Promise<Decided>;
  /**
   * `decide` with no promise when the answer is ready at once (the memory store's): the decision itself,
   * or a promise of it; it throws what `decide` would reject with. For the gRPC hot path; a decider
   * without it (a wrapper) is asked through `decide`.
   */
  decideNow?(request: RateLimitRequest, source: DecisionSource, carrier?: Carrier): Decided | Promise<Decided>;
}

/** Options of {@link createDecider}. */
export interface DeciderOptions {
  engine: RulesEngine;
  lists: AccessLists;
  hub: DecisionHub;
  metrics: ServiceMetrics;
  now: () => number;
  /** @default 'sluice' */
  headers?: ResponseHeaderStyle;
  /** Add envoy ratelimit's `dynamic_metadata` to every response. @default false */
  dynamicMetadata?: boolean;
  /** Share of a limit used past which an allowed decision counts as `near_limit`. @default NEAR_LIMIT_RATIO */
  nearLimitRatio?: number;
}

/** True for the errors a store raises when it cannot answer (mapped to UNAVAILABLE / 503). */
export function isStoreError(error: unknown): boolean {
  return (
    isSluiceError(error) && error.code.startsWith('ERR_SLUICE_STORE_') && error.code !== 'ERR_SLUICE_STORE_MISMATCH'
  );
}

const DENIED: DescriptorStatus = { code: 'OVER_LIMIT', limitRemaining: 0, durationUntilResetMs: 0 };
const ALLOWED: DescriptorStatus = { code: 'OK', limitRemaining: 0, durationUntilResetMs: 0 };

/**
 * Creates the decision path shared by the gRPC service, `POST /json` and the gateway.
 *
 * A deny entry matching any entry of a descriptor answers that descriptor OVER_LIMIT; the request is then
 * rejected, so the other descriptors are only looked at (hits 0), never counted — the same
 * all-or-nothing rule as the engine's. An allow entry answers its descriptor OK with no limit, as an
 * allow-listed descriptor of the config does.
 */
export function createDecider(options: DeciderOptions): Decider {
  const { engine, lists, hub, metrics, now } = options;
  const headerMode = options.headers ?? 'sluice';
  const nearLimitRatio = options.nearLimitRatio ?? NEAR_LIMIT_RATIO;

  /** Records a failed store call (the store latency and error metrics), then rethrows. */
  function storeFailed(started: number, error: unknown): never {
    if (isStoreError(error)) metrics.observeStore((performance.now() - started) / 1000, true);
    throw error;
  }

  function ask(request: RateLimitRequest): Promise<RateLimitResponse> {
    const started = performance.now();
    return engine.shouldRateLimit(request).then(
      (response) => {
        metrics.observeStore((performance.now() - started) / 1000, false);
        return response;
      },
      (error: unknown) => storeFailed(started, error),
    );
  }

  async function withLists(
    request: RateLimitRequest,
  ): Promise<{ response: RateLimitResponse; marks?: (ListName | undefined)[] }> {
    if (lists.size === 0) return { response: await ask(request) };
    const marks = request.descriptors.map((d) => listOf(lists, request.domain, d.entries));
    if (marks.every((m) => m === undefined)) return { response: await ask(request) };
    const denied = marks.includes('deny');
    const rest = request.descriptors.flatMap((d, i) =>
      marks[i] === undefined ? [denied ? { ...d, hitsAddend: 0 } : d] : [],
    );
    const asked =
      rest.length > 0 ? await ask({ ...request, descriptors: rest }) : { overallCode: 'OK' as const, statuses: [] };
    let next = 0;
    const statuses = marks.map((m) =>
      m === 'deny' ? DENIED : m === 'allow' ? ALLOWED : (asked.statuses[next++] ?? ALLOWED),
    );
    return { response: { overallCode: denied ? 'OVER_LIMIT' : asked.overallCode, statuses }, marks };
  }

  function decideNow(request: RateLimitRequest, source: DecisionSource): Decided | Promise<Decided> {
    if (lists.size !== 0) {
      return withLists(request).then(({ response, marks }) => settle(request, response, marks, source));
    }
    const started = performance.now();
    // The common case with no promise at all when the engine answers at once (the memory store), else in
    // one promise step (ask() and a second .then() would be two): this runs for every decision.
    const decideAtOnce = engine.decide;
    let answer: RateLimitResponse | Promise<RateLimitResponse>;
    try {
      answer = decideAtOnce === undefined ? engine.shouldRateLimit(request) : decideAtOnce(request);
    } catch (error) {
      storeFailed(started, error);
    }
    if (answer instanceof Promise) {
      return answer.then(
        (response) => {
          metrics.observeStore((performance.now() - started) / 1000, false);
          return settle(request, response, undefined, source);
        },
        (error: unknown) => storeFailed(started, error),
      );
    }
    metrics.observeStore((performance.now() - started) / 1000, false);
    return settle(request, answer, undefined, source);
  }

  return {
    decide(request, source) {
      try {
        const decided = decideNow(request, source);
        return decided instanceof Promise ? decided : Promise.resolve(decided);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    decideNow,
  };

  function settle(
    request: RateLimitRequest,
    response: RateLimitResponse,
    marks: (ListName | undefined)[] | undefined,
    source: DecisionSource,
  ): Decided {
    const atMs = now();
    // Listeners label and key by domain: only the rules' domains are let through as they are.
    const domain = engine.ruleSet.domains.has(request.domain) ? request.domain : UNKNOWN_DOMAIN;
    let bindingName = '';
    let bindingWindow = 0;
    let binding: Decision | undefined;
    // envoy's global shadow mode: statuses stay OVER_LIMIT but the request passed; count them as shadow.
    const globalShadow = response.shadowed === true;
    const statuses = response.statuses;
    for (let i = 0; i < statuses.length; i++) {
      const status = statuses[i] as DescriptorStatus;
      const list = marks?.[i];
      const limit = status.currentLimit;
      const shadow = status.shadow === true || (globalShadow && status.code === 'OVER_LIMIT');
      const outcome: DecisionOutcome = shadow
        ? 'shadow'
        : status.code === 'OVER_LIMIT'
          ? 'over_limit'
          : outcomeOf(true, limit?.limit, status.limitRemaining, nearLimitRatio);
      const descriptor = request.descriptors[i];
      const rule = status.ruleId ?? '';
      const key = descriptor === undefined ? '' : keyOf(descriptor.entries);
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
      hub.emit(event);
      const decision = status.decision;
      if (decision !== undefined && !shadow) {
        // The binding decision so far, pairwise: combineDecisions over all of them picks the same one,
        // without an array per request.
        const combined = binding === undefined ? decision : combineDecisions([binding, decision]);
        if (combined === decision || binding === undefined) {
          binding = combined;
          bindingName = status.ruleName ?? limit?.name ?? status.ruleId ?? request.domain;
          bindingWindow = limit?.periodMs ?? 1000;
        }
      }
    }
    if (marks?.includes('deny')) {
      // A deny entry decides the request, whatever the looked-at limits say.
      binding = {
        allowed: false,
        limit: 0,
        remaining: 0,
        resetMs: 0,
        retryAfterMs: Number.POSITIVE_INFINITY,
        reason: 'denied',
      };
      bindingName = 'denied';
      bindingWindow = 1000;
    }
    const headers =
      headerMode === 'sluice'
        ? binding === undefined
          ? {}
          : rateLimitHeaders(binding, bindingName, bindingWindow)
        : headerMode === 'none'
          ? {}
          : envoyHeaders(response.statuses, headerMode);
    const overallCode = response.overallCode;
    const decided: Decided =
      binding === undefined ? { overallCode, statuses, headers } : { overallCode, statuses, headers, binding };
    if (options.dynamicMetadata === true) decided.dynamicMetadata = dynamicMetadata(request, response.statuses);
    return decided;
  }
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

function listOf(
  lists: AccessLists,
  domain: string,
  entries: readonly { key: string; value: string }[],
): ListName | undefined {
  let found: ListName | undefined;
  for (const entry of entries) {
    const m = lists.match(domain, entry.key, entry.value);
    if (m === 'deny') return 'deny';
    if (m === 'allow') found = 'allow';
  }
  return found;
}
