/**
 * envoy ratelimit's stats, counted as its gostats store counts them: per-descriptor hit counters, the
 * service's counters and the ShouldRateLimit response time, with a bounded number of descriptor keys.
 * Sinks read them: the statsd sender takes the deltas since its last flush, the Prometheus page the totals.
 */

import { sanitizeStatName } from './stat-key.js';
import {
  DOMAIN_NOT_FOUND,
  HIT_SUFFIXES,
  type HitSuffix,
  RATE_LIMIT_SCOPE,
  RESPONSE_TIME,
  SERVER_SCOPE,
  SERVICE_COUNTERS,
  SHOULD_RATE_LIMIT_METHOD,
  TOTAL_REQUESTS,
} from './upstream-names.js';

/** The key descriptor counters past the series cap share. */
export const OVERFLOW_KEY = '_overflow_';
/** The domain of unknown domains past {@link MAX_UNKNOWN_DOMAINS}. */
export const UNKNOWN_DOMAIN_KEY = '_unknown_';
/** Most distinct unknown domains counted under their own name (a client chooses them). */
export const MAX_UNKNOWN_DOMAINS = 100;
/** Longest descriptor key kept as a series of its own; longer ones count under {@link OVERFLOW_KEY}. */
export const MAX_KEY_LENGTH = 512;

/** One counter: what its sinks have not sent yet, and its total since start. */
export interface StatCounter {
  /** The statsd name, without EXTRA_TAGS. */
  readonly name: string;
  pending: number;
  total: number;
}

/** The six counters of one descriptor key, indexed as {@link HIT_SUFFIXES}. */
export interface HitCounters {
  /** The sanitized key. */
  readonly key: string;
  readonly counters: readonly StatCounter[];
}

/** Index of each hit suffix in {@link HitCounters.counters}. */
export const HIT: Readonly<Record<HitSuffix, number>> = Object.fromEntries(
  HIT_SUFFIXES.map((s, i) => [s, i]),
) as Record<HitSuffix, number>;

/** Options of {@link createEnvoyStats}. */
export interface EnvoyStatsCountOptions {
  /** Most descriptor keys with series of their own. @default 10_000 */
  maxSeries?: number;
  /** Most response-time samples kept for the next statsd flush (more are dropped and counted). @default 0 (none kept) */
  maxTimerSamples?: number;
  /** Called once per response time, in milliseconds (the Prometheus histogram). */
  onResponseTime?: (ms: number) => void;
}

/** The counters and the response-time samples. */
export interface EnvoyStats {
  /** The counters of a descriptor's stats key, as built (sanitized here, once per key; bounded: past the cap, the overflow key's). */
  hitsOf(key: string): HitCounters;
  /** envoy's `<domain>.domain_not_found`. */
  domainNotFound(domain: string): void;
  /** One of the service's counters. */
  count(name: keyof typeof SERVICE_COUNTERS): void;
  /** One ShouldRateLimit call and its response time (whole milliseconds, as envoy's interceptor). */
  request(ms: number): void;
  /** Every counter made so far (descriptor keys in creation order, then the service's). */
  counters(): Iterable<StatCounter>;
  /** Takes the response-time samples kept since the last call. */
  takeSamples(): number[];
  /** Samples and lines that could not be sent (statsd unreachable, the sample buffer full). */
  dropped: number;
  /** Descriptor keys counted under {@link OVERFLOW_KEY} (over the cap or too long). */
  overflowed: number;
}

function counter(name: string): StatCounter {
  return { name, pending: 0, total: 0 };
}

/** Creates the counters. Nothing here allocates per call once a key has been seen. */
export function createEnvoyStats(options: EnvoyStatsCountOptions = {}): EnvoyStats {
  const maxSeries = options.maxSeries ?? 10_000;
  const maxSamples = options.maxTimerSamples ?? 0;
  const onResponseTime = options.onResponseTime;
  const keys = new Map<string, HitCounters>();
  const service = new Map<string, StatCounter>();
  const serviceOf = (name: string): StatCounter => {
    let c = service.get(name);
    if (c === undefined) {
      c = counter(name);
      service.set(name, c);
    }
    return c;
  };
  const totalRequests = serviceOf(`${SERVER_SCOPE}.${SHOULD_RATE_LIMIT_METHOD}.${TOTAL_REQUESTS}`);
  const unknownDomains = new Set<string>();
  // Keys with series of their own (the overflow key is not one of them).
  let own = 0;
  let samples: number[] = [];
  const make = (key: string): HitCounters => {
    const name = sanitizeStatName(key);
    const hits = { key: name, counters: HIT_SUFFIXES.map((s) => counter(`${RATE_LIMIT_SCOPE}.${name}.${s}`)) };
    keys.set(key, hits);
    return hits;
  };
  const stats: EnvoyStats = {
    dropped: 0,
    overflowed: 0,
    hitsOf(key) {
      const found = keys.get(key);
      if (found !== undefined) return found;
      if (own < maxSeries && key.length <= MAX_KEY_LENGTH) {
        own++;
        return make(key);
      }
      stats.overflowed++;
      return keys.get(OVERFLOW_KEY) ?? make(OVERFLOW_KEY);
    },
    domainNotFound(domain) {
      let name = domain;
      if (!unknownDomains.has(name)) {
        if (unknownDomains.size >= MAX_UNKNOWN_DOMAINS || name.length > MAX_KEY_LENGTH) name = UNKNOWN_DOMAIN_KEY;
        else unknownDomains.add(name);
      }
      const c = serviceOf(`${RATE_LIMIT_SCOPE}.${sanitizeStatName(name)}.${DOMAIN_NOT_FOUND}`);
      c.pending++;
      c.total++;
    },
    count(name) {
      const c = serviceOf(SERVICE_COUNTERS[name]);
      c.pending++;
      c.total++;
    },
    request(ms) {
      totalRequests.pending++;
      totalRequests.total++;
      if (samples.length < maxSamples) samples.push(ms);
      else if (maxSamples > 0) stats.dropped++;
      onResponseTime?.(ms);
    },
    *counters() {
      for (const hits of keys.values()) yield* hits.counters;
      yield* service.values();
    },
    takeSamples() {
      const taken = samples;
      samples = [];
      return taken;
    },
  };
  return stats;
}

/** The statsd name of the response-time timer. */
export const RESPONSE_TIME_NAME = `${SERVER_SCOPE}.${SHOULD_RATE_LIMIT_METHOD}.${RESPONSE_TIME}`;
