/** The service's Prometheus metrics (`sluice_*`): decisions, the store, reloads, HTTP, gRPC and gateway responses. */
import { Counter, collectDefaultMetrics, Registry } from 'prom-client';
import type { DecisionHub } from './decision-events.js';
import { countDecisions } from './decision-metrics.js';
import { createTalliedCounter, createTalliedHistogram, type TalliedCounter, type Tally } from './metric-tallies.js';
import { registerStoreMetrics, type StoreStats } from './store-metrics.js';

export { ADHOC_RULE, MAX_DECISION_SERIES, OVERFLOW_LABEL } from './decision-metrics.js';
export type { StoreStats } from './store-metrics.js';

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
  registerStoreMetrics(registry, store, options.storeStats);
  const storeErrorsTally = storeErrors.tally({ store });
  storeErrors.counter.inc({ store }, 0);
  reloads.inc({ result: 'ok' }, 0);
  reloads.inc({ result: 'failed' }, 0);

  countDecisions(registry, options.hub);
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
