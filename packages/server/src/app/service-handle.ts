/** A running service's handle, and its close: stop listening, let requests finish, close the core. */
import type { Store } from 'sluice';
import type { RulesEngine } from 'sluice/rules';
import type { ConfigSource, ConfigStatus } from '../config/config-source.js';
import type { AccessLists } from '../core/access-lists.js';
import type { DecisionHub } from '../observability/decision-events.js';
import type { Logger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { Core } from './service-core.js';
import type { Entries } from './service-entries.js';
import type { Listeners, Ports } from './service-listen.js';
import type { ServiceOptions } from './service-options.js';

/** A running service. */
export interface ServiceHandle {
  /** The HTTP API's bound port. */
  readonly httpPort: number;
  /** The gRPC server's bound port (0 with `grpc.socket`). */
  readonly grpcPort: number;
  /** The gRPC server's unix socket, with `grpc.socket`. */
  readonly grpcSocket?: string;
  /** The gateway's bound port, in gateway mode. */
  readonly proxyPort?: number;
  readonly engine: RulesEngine;
  readonly store: Store;
  readonly lists: AccessLists;
  /** Every decision, for stats collectors (the dashboard). */
  readonly hub: DecisionHub;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** Where the rules come from and how the last load went. */
  readonly config: ConfigStatus;
  /** Reloads the config now (as `POST /admin/reload` does). */
  reload: ConfigSource['reload'];
  /**
   * Stops: refuses new connections, lets in-flight requests finish (up to `shutdownGraceMs`), stops
   * watching, closes the store. Idempotent.
   */
  close(): Promise<void>;
}

/** The handle over a started service; `close` stops watching the config, then shuts everything down, once. */
export function serviceHandle(
  options: ServiceOptions,
  core: Core,
  entries: Entries,
  listeners: Listeners,
  ports: Ports,
  stopWatching: () => void,
): ServiceHandle {
  const { engine, lists, hub, logger } = core;
  const config = core.feed.source;
  let closing: Promise<void> | undefined;
  return {
    httpPort: ports.http,
    grpcPort: ports.grpc,
    ...(options.grpc?.socket === undefined ? {} : { grpcSocket: options.grpc.socket }),
    ...(ports.proxy === undefined ? {} : { proxyPort: ports.proxy }),
    engine,
    store: core.backend.store,
    lists,
    hub,
    metrics: core.telemetry.metrics,
    logger,
    get config() {
      return config.status;
    },
    reload: () => config.reload(),
    close() {
      closing ??= (async () => {
        entries.startDraining();
        stopWatching();
        entries.stats.close();
        await listeners.shutdown();
        logger.info('stopped');
      })();
      return closing;
    },
  };
}
