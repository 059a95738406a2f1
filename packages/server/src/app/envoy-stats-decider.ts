/**
 * envoy ratelimit's stats around the decider, in envoy mode: per descriptor the hits as its base_limiter.go
 * counts them (total_hits, over_limit, near_limit, within_limit, shadow_mode, by hits_addend), unknown
 * domains, the global shadow mode, recovered errors, and for gRPC calls ShouldRateLimit's count and
 * response time. Wraps the decider only when envoy's stats are on, so the path is untouched otherwise.
 */
import { performance } from 'node:perf_hooks';
import type { DescriptorStatus, RateLimitRequest, RequestDescriptor } from 'sluice/rules';
import { type Decider, isStoreError } from '../core/decide.js';
import type { Decided } from '../core/settle-decision.js';
import { NEAR_LIMIT_RATIO } from '../observability/decision-events.js';
import { type EnvoyStats, HIT } from '../observability/envoy-stats/envoy-stats.js';
import { keyOfEntries, keyOfRuleId } from '../observability/envoy-stats/stat-key.js';

/** What the counting needs besides the stats. */
export interface EnvoyStatsDeciderOptions {
  /** True for a domain the rules have. */
  knownDomain(domain: string): boolean;
  /** NEAR_LIMIT_RATIO. @default 0.8 */
  nearLimitRatio?: number;
  /** SHADOW_MODE: over-limit answers pass, and each such request counts global_shadow_mode. */
  globalShadow?: boolean;
}

/** Most rule identities whose stats key is remembered (they come from the config; cleared when full). */
const MAX_RULE_KEYS = 10_000;

/** A decider that counts envoy ratelimit's stats of every gRPC and /json decision. */
export function countEnvoyStats(decider: Decider, stats: EnvoyStats, options: EnvoyStatsDeciderOptions): Decider {
  const record = createRecorder(stats, options);
  const done = (started: number, grpc: boolean) => {
    if (grpc) stats.request(Math.floor(performance.now() - started));
  };
  const failed = (error: unknown, started: number, grpc: boolean): never => {
    stats.count(isStoreError(error) ? 'redisError' : 'serviceError');
    done(started, grpc);
    throw error;
  };
  const settle = (answer: Decided | Promise<Decided>, request: RateLimitRequest, started: number, grpc: boolean) => {
    if (answer instanceof Promise) {
      return answer.then(
        (decided) => {
          record(request, decided);
          done(started, grpc);
          return decided;
        },
        (error: unknown) => failed(error, started, grpc),
      );
    }
    record(request, answer);
    done(started, grpc);
    return answer;
  };
  const counted = (source: string) => source === 'grpc' || source === 'json';
  const inner = decider.decideNow?.bind(decider);
  return {
    decide(request, source, carrier) {
      if (!counted(source)) return decider.decide(request, source, carrier);
      const started = performance.now();
      return Promise.resolve(settle(decider.decide(request, source, carrier), request, started, source === 'grpc'));
    },
    ...(inner === undefined
      ? {}
      : {
          decideNow(request, source, carrier) {
            if (!counted(source)) return inner(request, source, carrier);
            const started = performance.now();
            let answer: Decided | Promise<Decided>;
            try {
              answer = inner(request, source, carrier);
            } catch (error) {
              return failed(error, started, source === 'grpc');
            }
            return settle(answer, request, started, source === 'grpc');
          },
        }),
  };
}

/** Counts one decided request into `stats`. */
function createRecorder(
  stats: EnvoyStats,
  options: EnvoyStatsDeciderOptions,
): (request: RateLimitRequest, decided: Decided) => void {
  const ratio = options.nearLimitRatio ?? NEAR_LIMIT_RATIO;
  const ruleKeys = new Map<string, string | undefined>();
  const keyOf = (request: RateLimitRequest, descriptor: RequestDescriptor, status: DescriptorStatus): string => {
    if (status.metricKey !== undefined) return status.metricKey;
    const id = status.ruleId;
    if (id !== undefined) {
      let key = ruleKeys.get(id);
      if (key === undefined && !ruleKeys.has(id)) {
        if (ruleKeys.size >= MAX_RULE_KEYS) ruleKeys.clear();
        key = keyOfRuleId(id);
        ruleKeys.set(id, key);
      }
      if (key !== undefined) return key;
    }
    return keyOfEntries(request.domain, descriptor.entries);
  };
  return (request, decided) => {
    const { descriptors } = request;
    if (!options.knownDomain(request.domain)) {
      for (let i = 0; i < descriptors.length; i++) stats.domainNotFound(request.domain);
      return;
    }
    let overLimit = false;
    const statuses = decided.statuses;
    for (let i = 0; i < statuses.length; i++) {
      const status = statuses[i] as DescriptorStatus;
      const limit = status.currentLimit;
      const descriptor = descriptors[i];
      // No limit applied (no rule, unlimited, an access list): envoy counts nothing either.
      if (limit === undefined || descriptor === undefined) continue;
      const hits = descriptor.hitsAddend ?? (request.hitsAddend || 1);
      const c = stats.hitsOf(keyOf(request, descriptor, status)).counters;
      add(c[HIT.total_hits], hits);
      if (status.code === 'OVER_LIMIT' || status.shadow === true) {
        overLimit ||= status.code === 'OVER_LIMIT';
        add(c[HIT.over_limit], hits);
        if (status.shadow === true) add(c[HIT.shadow_mode], hits);
        continue;
      }
      // Allowed: the hits past floor(limit × ratio) are near the limit (checkNearLimitThreshold).
      const after = limit.limit - status.limitRemaining;
      const near = Math.floor(limit.limit * ratio);
      if (after > near) add(c[HIT.near_limit], Math.min(hits, after - near));
      add(c[HIT.within_limit], hits);
    }
    if (overLimit && options.globalShadow === true && decided.overallCode === 'OK') stats.count('globalShadowMode');
  };
}

function add(counter: { pending: number; total: number } | undefined, n: number): void {
  if (counter === undefined || n <= 0) return;
  counter.pending += n;
  counter.total += n;
}

/** `decider` counted into envoy's stats when `telemetry` has them (envoy mode), else `decider` itself. */
export function withEnvoyStats(
  decider: Decider,
  envoy: { readonly stats: EnvoyStats } | undefined,
  engine: { readonly ruleSet: { readonly domains: ReadonlyMap<string, unknown> } },
  options: { shadow?: boolean; observability?: { nearLimitRatio?: number } },
): Decider {
  if (envoy === undefined) return decider;
  const ratio = options.observability?.nearLimitRatio;
  return countEnvoyStats(decider, envoy.stats, {
    knownDomain: (domain) => engine.ruleSet.domains.has(domain),
    globalShadow: options.shadow === true,
    ...(ratio === undefined ? {} : { nearLimitRatio: ratio }),
  });
}
