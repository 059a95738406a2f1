/** The xDS stream as the service's config source: rules applied as they arrive, readiness until the first config. */
import type { LoadResult, RuleSet } from 'sluice/rules';
import type { Logger } from '../../observability/logger.js';
import type { ConfigSource, ConfigStatus } from '../config-source.js';
import { publicIssue } from '../public-issues.js';
import type { XdsOptions } from './xds-options.js';
import { startXdsSource } from './xds-source.js';

/** The xDS source as the service's {@link ConfigSource}, plus the wait for the first config. */
export interface XdsConfigSource extends ConfigSource {
  /** Resolves once the first valid config from the management server was applied. */
  readonly firstConfig: Promise<void>;
  /** True once the first valid config was applied: until then the service reports not ready. */
  readonly hasConfig: boolean;
}

/**
 * Takes the rules from an xDS management server (see `startXdsSource`), with the same status, reports
 * and last-good behaviour as files. The stream opens at once; the service listens meanwhile and reports
 * not ready until `hasConfig` (unless forced to start); `watch()` returns the function that closes it, and `reload()` answers with
 * the last response's result (the server pushes changes; there is nothing to re-read).
 */
export function createXdsConfigSource(
  options: XdsOptions,
  apply: (ruleSet: RuleSet) => void,
  report: (result: LoadResult) => void,
  logger: Logger,
  mergeDomains: boolean,
): XdsConfigSource {
  let status: ConfigStatus = { source: 'xds', paths: [options.server], files: [], loadedAt: new Date().toISOString() };
  let last: LoadResult = { ok: true, ruleSet: { domains: new Map(), files: [] }, files: [] };
  const source = startXdsSource(options, {
    logger,
    mergeDomains,
    apply,
    report(result, version) {
      last = result;
      // The status is shown without a token (/api/rules): its issues never quote what was sent.
      status = result.ok
        ? { source: 'xds', paths: [options.server], files: result.files, loadedAt: new Date().toISOString(), version }
        : { ...status, lastError: { at: new Date().toISOString(), issues: result.issues.map(publicIssue) } };
      report(result);
    },
  });
  return {
    firstConfig: source.firstConfig,
    get hasConfig() {
      return source.hasConfig;
    },
    get status() {
      return status;
    },
    reload: async () => last,
    watch: () => () => source.close(),
  };
}
