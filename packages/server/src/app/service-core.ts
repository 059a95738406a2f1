/** The service's core: the parts every listener shares (store, telemetry, rules, decider, lists), built before anything listens. */
import { systemClock } from 'sluice';
import type { RulesEngine } from 'sluice/rules';
import type { AccessLists } from '../core/access-lists.js';
import { createAccessLists } from '../core/access-lists.js';
import { createDecider, type Decider } from '../core/decide.js';
import type { DecisionHub } from '../observability/decision-events.js';
import { createDecisionHub } from '../observability/decision-events.js';
import type { Logger } from '../observability/logger.js';
import { withEnvoyStats } from './envoy-stats-decider.js';
import { type ServiceCapture, startServiceCapture } from './service-capture.js';
import { createServiceTelemetry, type ServiceTelemetry } from './service-observability.js';
import type { ServiceOptions } from './service-options.js';
import { createRulesFeed, createServiceEngine, type loadFirstRules, type RulesFeed } from './service-rules.js';
import { openServiceStore, type ServiceStore } from './service-store.js';
import { traceDecisions } from './traced-decider.js';

/** The parts every listener shares, built before anything listens. */
export interface Core {
  readonly backend: ServiceStore;
  readonly telemetry: ServiceTelemetry;
  readonly engine: RulesEngine;
  readonly feed: RulesFeed;
  readonly decider: Decider;
  readonly lists: AccessLists;
  readonly hub: DecisionHub;
  readonly logger: Logger;
  /** `--capture`: its writer, closed at shutdown. */
  readonly capture?: ServiceCapture;
}

/** The store, telemetry, engine, rules feed and decider; on a bad option, what was opened is closed again. */
export async function buildCore(
  options: ServiceOptions,
  first: Awaited<ReturnType<typeof loadFirstRules>>,
  logger: Logger,
): Promise<Core> {
  const backend = await openServiceStore(options.store, logger);
  const hub = createDecisionHub();
  const clock = options.clock ?? systemClock;
  let telemetry: ServiceTelemetry | undefined;
  try {
    telemetry = createServiceTelemetry(options.observability ?? {}, hub, backend.store, logger);
    const { metrics, tracer } = telemetry;
    const engine = createServiceEngine(options, first.ruleSet, backend.store, clock);
    const feed = createRulesFeed(options, first, engine, metrics, logger);
    const lists = createAccessLists();
    const nearLimitRatio = options.observability?.nearLimitRatio;
    const uncaptured = createDecider({
      engine,
      lists,
      hub,
      metrics,
      now: () => clock.now(),
      ...(options.headers === undefined ? {} : { headers: options.headers }),
      ...(options.dynamicMetadata === true ? { dynamicMetadata: true } : {}),
      ...(nearLimitRatio === undefined ? {} : { nearLimitRatio }),
    });
    const parts = { decider: uncaptured, engine, clock, registry: metrics.registry, logger };
    const capture = options.capture === undefined ? undefined : startServiceCapture(options.capture, parts);
    const decided = capture?.decider ?? uncaptured;
    const counted = withEnvoyStats(decided, telemetry.envoy, engine, options);
    const decider = tracer === undefined ? counted : traceDecisions(counted, tracer);
    const captured = capture === undefined ? {} : { capture };
    return { backend, telemetry, engine, feed, decider, lists, hub, logger, ...captured };
  } catch (error) {
    // A bad option must not leave a Redis connection holding the process open.
    await telemetry?.close();
    await backend.shutdown();
    throw error;
  }
}
