/**
 * `startService`, the composition root: builds the parts (store, rules, decisions, telemetry), wires them
 * into the listeners (HTTP API, gRPC, gateway, metrics), listens, and returns the running service's handle.
 */
import { systemClock } from 'sluice';
import { createLogger } from '../observability/logger.js';
import { readTlsMaterial } from '../protocols/grpc/tls.js';
import { createAdminAuth } from '../protocols/http/admin-auth.js';
import { buildCore } from './service-core.js';
import { createEntries } from './service-entries.js';
import { type ServiceHandle, serviceHandle } from './service-handle.js';
import { createListeners, listenAll, logListening } from './service-listen.js';
import { checkServiceOptions, type ServiceOptions } from './service-options.js';
import { loadFirstRules } from './service-rules.js';

export type { ServiceHandle } from './service-handle.js';
export type { ServiceOptions } from './service-options.js';

/**
 * Starts the sluice service: the Envoy RLS v3 gRPC API, the HTTP API (`/json`, `/v1/check`,
 * `/healthcheck`, `/metrics`, `/admin`, the dashboard) and, with `gateway`, the gateway.
 *
 * @example
 * import { startService } from 'sluice-server';
 * const service = await startService({ config: './rules', host: '127.0.0.1', http: { port: 0 }, grpc: { port: 0 } });
 * console.log(service.httpPort, service.grpcPort);
 * await service.close();
 */
export async function startService(options: ServiceOptions = {}): Promise<ServiceHandle> {
  checkServiceOptions(options);
  const logger = options.observability?.logger ?? createLogger(options.observability?.logLevel ?? 'info');
  // Checked before any port or store is opened: a short admin token, the rules, the TLS files.
  const adminAuth = createAdminAuth(options.adminToken);
  const first = await loadFirstRules(options);
  const tlsMaterial = options.grpc?.tls === undefined ? undefined : readTlsMaterial(options.grpc.tls);

  // The parts, then the ways in over them; nothing listens yet.
  const core = await buildCore(options, first, logger);
  const entries = createEntries(options, core, adminAuth, options.clock ?? systemClock);
  if (core.feed.awaitingXds()) {
    // Listening at once, not ready (503) until the first config: awaiting it here, with nothing listening,
    // left Node nothing to wait on while the management server was unreachable, and it exited 0.
    logger.info(
      { server: options.xds?.server },
      'not ready until the first config arrives from the xDS management server',
    );
  }

  // Listen; a failed bind closes what was opened.
  const listeners = createListeners(core, options.shutdownGraceMs ?? 10_000);
  try {
    const ports = await listenAll(options, core, entries, listeners, tlsMaterial);
    const stopWatching = options.watch === false ? () => {} : core.feed.source.watch();
    logListening(options, core, entries, ports);
    return serviceHandle(options, core, entries, listeners, ports, stopWatching);
  } catch (error) {
    await listeners.shutdown();
    throw error;
  }
}
