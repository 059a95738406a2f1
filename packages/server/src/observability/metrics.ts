import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { DecisionEvent, DecisionHub, DecisionOutcome } from './decision-events.js';
import { createTalliedCounter, createTalliedHistogram, type TalliedCounter, type Tally } from './metric-tallies.js';

const OUTCOME_INDEX: Readonly<Record<DecisionOutcome, number>> = { ok: 0, near_limit: 1, over_limit: 2, shadow: 3 };

/** The `rule` label of every `/v1/check` decision: its policies are the caller's, not the config's. */
export const ADHOC_RULE = '_adhoc';
/** The `domain` and `rule` labels of decisions past {@link MAX_DECISION_SERIES}. */
export const OVERFLOW_LABEL = '_overflow';
/** Most (domain, rule, outcome) series of `sluice_decisions_total`: 4 outcomes of 2,500 rules. */
export const MAX_DECISION_SERIES = 10_000;

/** Counters a store may expose (the Redis store's local over-limit cache, the memory store's keys). */
export type StoreStats = () => Readonly<Record<string, number>> | undefined;

/** What the service records besides decisions. */
export interface ServiceMetrics {
  readonly registry: Registry;
  /** Content type of {@link ServiceMetrics.render}'s text. */
  readonly contentType: string;
  /** The Prometheus text exposition of every metric. */
  render(): Promise<string>;
  /** One store round trip (an engine or /v1/check call), its latency, and whether the store failed. */
  observeStore(seconds: number, failed: boolean): void;
  /** A config reload, good or bad. */
  reload(result: 'ok' | 'failed'): void;
  /** One HTTP API response. */
  http(route: string, status: number): void;
  /** One gRPC call, by status code name. */
  grpc(code: string): void;
  /** One gateway response, by status. */
  gateway(status: number): void;
}

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  hub: DecisionHub;
  /** The store's name, a constant label of the store metrics. */
  storeName: string;
  storeStats?: StoreStats;
  /** Also export Node's process metrics (`sluice_process_*`, `sluice_nodejs_*`). @default true */
  processMetrics?: boolean;
}

/**
 * Creates the service's Prometheus metrics, every name prefixed `sluice_`, in a registry of its own (two
 * services in one process do not share counters). Decision counters follow the hub.
 */
export function createMetrics(options: MetricsOptions): ServiceMetrics {
  const registry = new Registry();
  const store = options.storeName;
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'sluice_' });

  const decisions = createTalliedCounter({
    name: 'sluice_decisions_total',
    help: 'Rate-limit decisions, by domain, rule and outcome (ok, near_limit, over_limit, shadow; exclusive).',
    labelNames: ['domain', 'rule', 'outcome'] as const,
    registers: [registry],
  });
  const listHits = new Counter({
    name: 'sluice_access_list_hits_total',
    help: 'Decisions answered by an allow or deny list entry.',
    labelNames: ['list'] as const,
    registers: [registry],
  });
  const storeErrors = createTalliedCounter({
    name: 'sluice_store_errors_total',
    help: 'Store calls that failed (unreachable, timed out).',
    labelNames: ['store'] as const,
    registers: [registry],
  });
  const storeLatency = createTalliedHistogram({
    name: 'sluice_store_latency_seconds',
    help: 'Latency of one decision call to the store.',
    labels: { store },
    buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    registers: [registry],
  });
  const reloads = new Counter({
    name: 'sluice_config_reloads_total',
    help: 'Config reloads, by result (ok, failed).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const httpResponses = createTalliedCounter({
    name: 'sluice_http_responses_total',
    help: 'HTTP API responses, by route and status.',
    labelNames: ['route', 'status'] as const,
    registers: [registry],
  });
  const grpcCalls = createTalliedCounter({
    name: 'sluice_grpc_calls_total',
    help: 'gRPC ShouldRateLimit calls, by status code.',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const gatewayResponses = createTalliedCounter({
    name: 'sluice_gateway_responses_total',
    help: 'Gateway responses, by status.',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  // Store-side counters (the Redis store's local over-limit cache, the memory store's evictions, the
  // Redis store's refused writes) are read from store.stats() when scraped.
  const storeCounter = (name: string, help: string, field: string) => {
    let last = 0;
    const counter = new Counter({
      name,
      help,
      labelNames: ['store'] as const,
      registers: [registry],
      collect() {
        const value = options.storeStats?.()?.[field];
        if (typeof value === 'number' && value > last) {
          this.inc({ store }, value - last);
          last = value;
        }
      },
    });
    counter.inc({ store }, 0);
  };
  storeCounter(
    'sluice_local_cache_hits_total',
    'Decisions answered by the local over-limit cache without a store round trip.',
    'localCacheHits',
  );
  storeCounter(
    'sluice_store_evictions_total',
    'Keys the memory store forgot to stay within maxKeys/maxBytes (each started afresh), least used first.',
    'evictions',
  );
  storeCounter(
    'sluice_store_evicted_at_limit_total',
    'Evictions of keys at their limit or blocked: the memory store is too small for the keys really limited.',
    'evictedAtLimit',
  );
  storeCounter(
    'sluice_store_leases_refused_total',
    'Concurrency leases the memory store refused because the leases held filled their half of maxBytes (or maxKeys).',
    'leasesRefused',
  );
  storeCounter(
    'sluice_store_refused_total',
    'Requests Redis could not decide because it refused the write they needed (maxmemory, read-only replica).',
    'refused',
  );
  new Gauge({
    name: 'sluice_store_keys',
    help: 'Keys held by the memory store (absent for other stores).',
    labelNames: ['store'] as const,
    registers: [registry],
    collect() {
      const keys = options.storeStats?.()?.keys;
      if (typeof keys === 'number') this.set({ store }, keys);
    },
  });
  // The memory store's own accounting (absent for other stores): what --memory-max-bytes bounds.
  for (const [name, help, field] of [
    ['sluice_store_bytes', 'Estimated bytes of state the memory store holds (keys, logs, blocks, leases).', 'bytes'],
    ['sluice_store_leases', 'Concurrency leases the memory store holds (at most half of maxBytes worth).', 'leases'],
  ] as const) {
    new Gauge({
      name,
      help,
      labelNames: ['store'] as const,
      registers: [registry],
      collect() {
        const value = options.storeStats?.()?.[field];
        if (typeof value === 'number') this.set({ store }, value);
      },
    });
  }
  const storeErrorsTally = storeErrors.tally({ store });
  storeErrors.counter.inc({ store }, 0);
  reloads.inc({ result: 'ok' }, 0);
  reloads.inc({ result: 'failed' }, 0);

  // The hot path: one tally per (domain, rule, outcome), found through two maps and an array, so no
  // label string is built or hashed per decision. Label values come from the rules: the decider already
  // folds unknown domains into UNKNOWN_DOMAIN, `/v1/check` policies (chosen by callers) fold into
  // ADHOC_RULE here, and past MAX_DECISION_SERIES every new combination counts under OVERFLOW_LABEL, so no
  // client can grow /metrics (nor these maps).
  const byDomain = new Map<string, Map<string, (Tally | undefined)[]>>();
  const overflow: (Tally | undefined)[] = [];
  let decisionSeries = 0;
  const newDecisionSeries = (domain: string, rule: string, outcome: DecisionOutcome): Tally => {
    const i = OUTCOME_INDEX[outcome];
    if (decisionSeries >= MAX_DECISION_SERIES) {
      let tally = overflow[i];
      if (tally === undefined) {
        tally = decisions.tally({ domain: OVERFLOW_LABEL, rule: OVERFLOW_LABEL, outcome });
        overflow[i] = tally;
      }
      return tally;
    }
    let rules = byDomain.get(domain);
    if (rules === undefined) {
      rules = new Map();
      byDomain.set(domain, rules);
    }
    let tallies = rules.get(rule);
    if (tallies === undefined) {
      tallies = [undefined, undefined, undefined, undefined];
      rules.set(rule, tallies);
    }
    const tally = decisions.tally({ domain, rule, outcome });
    tallies[i] = tally;
    decisionSeries++;
    return tally;
  };
  options.hub.subscribe((event: DecisionEvent) => {
    const rule = event.source === 'check' ? ADHOC_RULE : event.rule;
    const tally = byDomain.get(event.domain)?.get(rule)?.[OUTCOME_INDEX[event.outcome]];
    if (tally !== undefined) tally.n++;
    else newDecisionSeries(event.domain, rule, event.outcome).n++;
    if (event.list !== undefined) listHits.inc({ list: event.list });
  });
  // Per-call counters: tallies kept in small maps (statuses and routes are few).
  const httpTallies = new Map<string, Tally>();
  const grpcTallies = new Map<string, Tally>();
  const gatewayTallies = new Map<number, Tally>();

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    observeStore(seconds, failed) {
      storeLatency.observe(seconds);
      if (failed) storeErrorsTally.n++;
    },
    reload: (result) => reloads.inc({ result }),
    http: (route, status) => {
      tallyOf(httpTallies, `${route} ${status}`, httpResponses, { route, status: String(status) }).n++;
    },
    grpc: (code) => {
      tallyOf(grpcTallies, code, grpcCalls, { code }).n++;
    },
    gateway: (status) => {
      tallyOf(gatewayTallies, status, gatewayResponses, { status: String(status) }).n++;
    },
  };
}

/**
 * Metrics that record nothing (envoy ratelimit's DISABLE_STATS): an empty registry, every call a no-op,
 * `render()` an empty exposition.
 */
export function createDisabledMetrics(): ServiceMetrics {
  const registry = new Registry();
  const none = () => {};
  return {
    registry,
    contentType: registry.contentType,
    render: async () => '',
    observeStore: none,
    reload: none,
    http: none,
    grpc: none,
    gateway: none,
  };
}

/**
 * The tally of a per-call series, made on first use. Every id comes from a small closed set — route names,
 * HTTP statuses (three digits), gRPC code names — so these maps stay small whatever clients send.
 */
function tallyOf<K, L extends string>(
  map: Map<K, Tally>,
  id: K,
  counter: TalliedCounter<L>,
  labels: Partial<Record<L, string>>,
): Tally {
  let tally = map.get(id);
  if (tally === undefined) {
    tally = counter.tally(labels);
    map.set(id, tally);
  }
  return tally;
}
