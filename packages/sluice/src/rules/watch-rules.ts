/**
 * `watchRules`: hot reload of rule files. Directories are watched and changes debounced; a valid change is applied to
 * the engine with its counters kept, an invalid one is reported and changes nothing.
 */
import { SluiceError } from '../core/errors.js';
import { RULE_ISSUE_CODES } from './codes.js';
import { DirectoryWatchers } from './directory-watchers.js';
import type { RulesEngine } from './engine-types.js';
import { type LoadRulesOptions, readSources, withReadIssues } from './load-rules.js';
import { parseRules } from './parse-rules.js';
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
  if (typeof options?.onReload !== 'function') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'onReload: expected a function', { option: 'onReload' });
  }
  const debounceMs = options.debounceMs ?? 100;
  if (!Number.isInteger(debounceMs) || debounceMs < 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'debounceMs: expected a whole number of ms ≥ 0', {
      option: 'debounceMs',
    });
  }
  const list = typeof paths === 'string' ? [paths] : [...paths];
  const watchers = new DirectoryWatchers(list, () => schedule());
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<LoadResult> | undefined;
  let again = false;
  let closed = false;
  let lastSignature: string | undefined;
  let lastGood: RuleSet | undefined;

  function schedule(): void {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      // load() never rejects; only an exception thrown by onReload itself could land here, and a file
      // event must not turn it into an unhandled rejection that ends the process.
      run(false).catch(() => {});
    }, debounceMs);
    timer.unref();
  }

  const parse =
    options.parse ?? ((sources: RuleSource[]) => parseRules(sources, { mergeDomains: options.mergeDomains === true }));

  async function load(): Promise<{ result: LoadResult; changed: boolean }> {
    try {
      const { sources, issues } = await readSources(list);
      const signature = JSON.stringify([sources, issues]);
      const changed = signature !== lastSignature;
      lastSignature = signature;
      return { result: withReadIssues(issues, await parse(sources), sources), changed };
    } catch (error) {
      // Whatever went wrong, it is a failed reload (the rules in use stay), never an unhandled rejection.
      lastSignature = undefined;
      return { result: loadFailed(list, error), changed: true };
    }
  }

  async function run(force: boolean): Promise<LoadResult> {
    if (running) {
      // A change arrived while loading: load once more afterwards, so the last write always wins.
      again = true;
      return running;
    }
    running = (async () => {
      let outcome: { result: LoadResult; changed: boolean };
      let changed = force;
      try {
        do {
          again = false;
          outcome = await load();
          changed ||= outcome.changed;
        } while (again && !closed);
      } finally {
        running = undefined;
      }
      watchers.ensure();
      if (changed && !closed) report(outcome.result);
      return outcome.result;
    })();
    return running;
  }

  function report(result: LoadResult): void {
    if (result.ok) {
      lastGood = result.ruleSet;
      options.engine?.setRuleSet(result.ruleSet);
    }
    options.onReload(result);
  }

  watchers.ensure();
  return {
    reload: () => run(true),
    get lastGood() {
      return lastGood;
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      watchers.close();
    },
  };
}

/** A failed LoadResult for an exception thrown while loading. */
export function loadFailed(paths: readonly string[], error: unknown): LoadResult {
  const message = error instanceof Error ? error.message : String(error);
  return {
    ok: false,
    issues: [
      {
        code: RULE_ISSUE_CODES.loadFailed,
        message: `loading the rules failed: ${message}; the rules in use stay`,
        file: paths.join(', '),
        line: 0,
        column: 0,
      },
    ],
    files: [],
  };
}
