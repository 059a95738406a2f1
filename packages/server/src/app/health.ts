/** The state `GET /healthcheck` reports. */
export interface HealthReport {
  status: number;
  body: {
    status: 'ok' | 'degraded' | 'unavailable' | 'draining' | 'starting' | 'no-config';
    store: string;
    storeReachable: boolean;
  };
}

/** Options of {@link createHealth}. */
export interface HealthOptions {
  storeName: string;
  /** Resolves when the store answers; absent for the memory store, which always does. */
  ping?: () => Promise<unknown>;
  /** True when decisions need the store (fail-closed): an unreachable store then makes the service unhealthy. */
  failClosed: boolean;
  /**
   * False until the store can decide (a Redis store before its first connection and script load):
   * the service is not ready, so load balancers send nothing yet. Absent: always ready.
   */
  ready?: () => boolean;
  /** True while shutting down: load balancers should stop sending. */
  draining: () => boolean;
  /**
   * False while the service has no config to decide with: no domain loaded, when health must wait for
   * one (envoy ratelimit's HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED), or no first config yet from an xDS
   * management server (unless FORCE_START_WITHOUT_INITIAL_CONFIG). 503 `no-config` meanwhile.
   * @default always true
   */
  configLoaded?: () => boolean;
  /** How long one ping may take. @default 250 */
  timeoutMs?: number;
  /** How long a ping's answer is reused, so health checks cannot turn into store load. @default 500 */
  cacheMs?: number;
}

/**
 * The service's health: 200 when it can decide (`degraded` when the store is down but a fail-open or
 * insurance policy answers), 503 while the store is unreachable under fail-closed, while it has not
 * been ready yet (`starting`: a Redis store before its first connection), or while draining.
 */
export function createHealth(options: HealthOptions): () => Promise<HealthReport> {
  const timeoutMs = options.timeoutMs ?? 250;
  const cacheMs = options.cacheMs ?? 500;
  let last: { atMs: number; reachable: boolean } | undefined;
  let pending: Promise<boolean> | undefined;

  function probe(): Promise<boolean> {
    const ping = options.ping;
    if (ping === undefined) return Promise.resolve(true);
    if (last !== undefined && Date.now() - last.atMs < cacheMs) return Promise.resolve(last.reachable);
    pending ??= new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      ping().then(
        () => {
          clearTimeout(timer);
          resolve(true);
        },
        () => {
          clearTimeout(timer);
          resolve(false);
        },
      );
    }).then((reachable) => {
      last = { atMs: Date.now(), reachable };
      pending = undefined;
      return reachable;
    });
    return pending;
  }

  return async () => {
    const store = options.storeName;
    if (options.draining()) return { status: 503, body: { status: 'draining', store, storeReachable: true } };
    if (options.ready !== undefined && !options.ready()) {
      return { status: 503, body: { status: 'starting', store, storeReachable: false } };
    }
    if (options.configLoaded?.() === false) {
      return { status: 503, body: { status: 'no-config', store, storeReachable: true } };
    }
    const reachable = await probe();
    if (reachable) return { status: 200, body: { status: 'ok', store, storeReachable: true } };
    if (options.failClosed) return { status: 503, body: { status: 'unavailable', store, storeReachable: false } };
    return { status: 200, body: { status: 'degraded', store, storeReachable: false } };
  };
}
