/**
 * The service's decider: allow and deny lists first, then the rules engine over the store, one answer for gRPC, /json and the gateway.
 */
import { performance } from 'node:perf_hooks';
import { isSluiceError } from 'sluice';
import type { DescriptorStatus, RateLimitRequest, RateLimitResponse, RulesEngine } from 'sluice/rules';
import type { DecisionHub, DecisionSource } from '../observability/decision-events.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { Carrier } from '../observability/tracing/trace-context.js';
import type { AccessLists, ListName } from './access-lists.js';
import { createSettle, type Decided, type ResponseHeaderStyle } from './settle-decision.js';

export type { Decided, ResponseHeaderStyle } from './settle-decision.js';

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
  const { engine, lists, metrics } = options;
  const settle = createSettle(options);

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
