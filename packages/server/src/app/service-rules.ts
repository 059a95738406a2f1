/** The service's rules: the first load (files, the example, or none until xDS answers), the engine, and where reloads come from. */
import type { Clock, Store } from 'sluice';
import { SluiceError } from 'sluice';
import type { LoadResult, RuleSet, RuleSource, RulesEngine } from 'sluice/rules';
import { createRulesEngine, parseRules } from 'sluice/rules';
import type { ConfigSource } from '../config/config-source.js';
import { createConfigSource, formatIssues, foundNoFiles, loadConfig, NO_RULES } from '../config/config-source.js';
import { createXdsConfigSource } from '../config/xds/xds-config-source.js';
import type { Logger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { ServiceOptions } from './service-options.js';

/** The config paths of `options` (none: the built-in example). */
export function configPaths(options: ServiceOptions): string[] {
  return options.config === undefined ? [] : [options.config].flat();
}

/**
 * The rules to start with, read on this thread (nothing is served yet; reloads parse off-thread).
 * @throws SluiceError `ERR_SLUICE_CONFIG_INVALID` listing every problem of the files.
 */
export async function loadFirstRules(options: ServiceOptions): Promise<LoadResult & { ok: true }> {
  // xDS: the rules arrive once the stream is open; until then no domain is known.
  if (options.xds !== undefined) return NO_RULES;
  const mergeDomains = options.mergeDomains === true;
  const parse = (sources: RuleSource[]) => parseRules(sources, { mergeDomains });
  const loaded = await loadConfig(configPaths(options), parse, envoyRuntime(options));
  if (loaded.ok) return loaded;
  // envoy ratelimit starts with an empty config directory (every domain unknown) and picks files up later.
  if (options.startWithoutConfig === true && foundNoFiles(loaded)) return NO_RULES;
  throw new SluiceError(
    'ERR_SLUICE_CONFIG_INVALID',
    `the config has ${loaded.issues.length} problem(s):\n${formatIssues(loaded.issues)}`,
  );
}

/** The engine over `store` with the service's decision options. Throws on a bad option. */
export function createServiceEngine(
  options: ServiceOptions,
  ruleSet: RuleSet,
  store: Store,
  clock: Clock,
): RulesEngine {
  return createRulesEngine({
    ruleSet,
    store,
    clock,
    ...(options.fail === undefined ? {} : { fail: options.fail }),
    ...(options.shadow === undefined ? {} : { shadow: options.shadow }),
    ...(options.insuranceShare === undefined ? {} : { insuranceShare: options.insuranceShare }),
    ...(options.quota === undefined ? {} : { quota: options.quota }),
  });
}

/** Where reloads come from (the files, or the xDS stream), and whether readiness waits for xDS's first config. */
export interface RulesFeed {
  readonly source: ConfigSource;
  /** True until an xDS server sent a first config, when readiness waits for one. */
  awaitingXds(): boolean;
}

/** Feeds reloaded rules into `engine`, reporting each load in the metrics and the log. */
export function createRulesFeed(
  options: ServiceOptions,
  first: LoadResult & { ok: true },
  engine: RulesEngine,
  metrics: ServiceMetrics,
  logger: Logger,
): RulesFeed {
  const mergeDomains = options.mergeDomains === true;
  const report = (result: LoadResult) => {
    metrics.reload(result.ok ? 'ok' : 'failed');
    if (result.ok) logger.info({ files: result.files, domains: [...result.ruleSet.domains.keys()] }, 'config loaded');
    else logger.warn({ issues: result.issues }, 'config reload failed; keeping the last good rules');
  };
  const apply = (ruleSet: RuleSet) => engine.setRuleSet(ruleSet);
  const xds = options.xds;
  if (xds !== undefined) {
    const source = createXdsConfigSource(xds, apply, report, logger, mergeDomains);
    // FORCE_START_WITHOUT_INITIAL_CONFIG=true: ready at once.
    return { source, awaitingXds: () => xds.forceStart !== true && !source.hasConfig };
  }
  const source = createConfigSource(configPaths(options), first, apply, report, {
    mergeDomains,
    subdirectories: envoyRuntime(options),
    // envoy mode: a reload that finds no rule file means no domains, as at start and as in envoy ratelimit.
    noFilesIsEmpty: options.startWithoutConfig === true,
    ...(options.configRoot === undefined ? {} : { root: options.configRoot }),
  });
  return { source, awaitingXds: () => false };
}

/**
 * True in envoy mode (a RUNTIME_ROOT): its runtime loader walks the config directory's subdirectories too
 * (config/sub/x.yaml is runtime key config.sub.x.yaml), so sluice reads them there; `--config DIR` does not.
 */
function envoyRuntime(options: ServiceOptions): boolean {
  return options.configRoot !== undefined;
}
