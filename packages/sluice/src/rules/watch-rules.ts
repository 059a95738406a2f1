/**
 * `watchRules`: hot reload of rule files. Directories are watched and changes debounced; a valid change is applied to
 * the engine with its counters kept, an invalid one is reported and changes nothing.
 */
import { SluiceError } from '../core/errors.js';
import type { RulesEngine } from './engine-types.js';
import type { LoadRulesOptions } from './load-rules.js';
import { parseRules } from './parse-rules.js';
import { RulesReloader } from './rules-reloader.js';
import type { LoadResult, RuleSet, RuleSource } from './types.js';

/** Options of `watchRules`. */
export interface WatchRulesOptions {
  /**
   * Called after each reload with its result. A failed result carries every issue; the rules in use do
   * not change (keep the last good RuleSet).
   */
  onReload(result: LoadResult): void;
  /** Quiet time after the last file event before reloading, in ms (editors write in several steps). @default 100 */
  debounceMs?: number;
  /** When given, every valid reload is applied to it with `setRuleSet`, keeping its counters. */
  engine?: RulesEngine;
  /** Parses the files' text, as `loadRules`'s option does. @default parseRules (with `mergeDomains`) */
  parse?: LoadRulesOptions['parse'];
  /** Merge files of one domain (see `ParseOptions`), when `parse` is the default. @default false */
  mergeDomains?: boolean;
  /** Read and watch subdirectories of the directories given, as `loadRules`' option does. @default false */
  subdirectories?: boolean;
}

/** A running watch. */
export interface RulesWatcher {
  /** Reloads now (without waiting for a file event) and reports the result as a file change would. */
  reload(): Promise<LoadResult>;
  /** The last RuleSet that loaded without problems during this watch, if any. */
  readonly lastGood: RuleSet | undefined;
  /** Stops watching; a reload in progress finishes but is not reported. */
  close(): void;
}

/**
 * Watches rule files and directories and reloads them when they change: a valid change becomes a new
 * RuleSet (applied to `engine` when given), an invalid one is reported and changes nothing. It watches
 * the directories (a file is watched through its directory, so editors that replace files by renaming
 * and Kubernetes ConfigMap symlink swaps are seen), waits `debounceMs` of quiet, and skips reloads whose
 * files did not change. The watch does not keep the process alive.
 *
 * @example
 * const watcher = watchRules('./config', {
 *   engine,
 *   onReload: (r) => (r.ok ? log.info('rules reloaded') : log.error({ issues: r.issues }, 'rules rejected')),
 * });
 * // later: watcher.close();
 */
export function watchRules(paths: string | readonly string[], options: WatchRulesOptions): RulesWatcher {
  const debounceMs = checkWatchOptions(options);
  const list = typeof paths === 'string' ? [paths] : [...paths];
  const parse =
    options.parse ?? ((sources: RuleSource[]) => parseRules(sources, { mergeDomains: options.mergeDomains === true }));
  const reloader = new RulesReloader(list, debounceMs, parse, options);
  reloader.watch();
  return {
    reload: () => reloader.run(true),
    get lastGood() {
      return reloader.lastGood;
    },
    close: () => reloader.close(),
  };
}

/** Checks the options a watch cannot start without; returns the debounce in ms. */
function checkWatchOptions(options: WatchRulesOptions): number {
  if (typeof options?.onReload !== 'function') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'onReload: expected a function', { option: 'onReload' });
  }
  const debounceMs = options.debounceMs ?? 100;
  if (!Number.isInteger(debounceMs) || debounceMs < 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'debounceMs: expected a whole number of ms ≥ 0', {
      option: 'debounceMs',
    });
  }
  return debounceMs;
}
