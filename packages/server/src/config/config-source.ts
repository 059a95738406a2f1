/**
 * Rules from files: the first load, watching files and the RUNTIME_ROOT symlink, reloads parsed off-thread, and the load status.
 */
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { LoadResult, LoadRulesOptions, RuleIssue, RuleSet } from 'sluice/rules';
import { loadRules, parseRules, RULE_ISSUE_CODES, watchRules } from 'sluice/rules';
import { EXAMPLE_CONFIG, EXAMPLE_CONFIG_NAME } from './example-config.js';
import { parseOffThread } from './parse-off-thread.js';
import { publicResult } from './public-issues.js';

/** Where the rules come from and how the last load went (for the admin API and the dashboard). */
export interface ConfigStatus {
  /** `files` for `--config`, `example` for the built-in example, `xds` for an xDS management server. */
  readonly source: 'files' | 'example' | 'xds';
  /** The paths given (files or directories). */
  readonly paths: readonly string[];
  /** The files the current rules were read from. */
  readonly files: readonly string[];
  /** When the current rules were loaded (ISO 8601). */
  readonly loadedAt: string;
  /** xDS: the version of the config in use. */
  readonly version?: string;
  /** The last reload attempt, when it failed: the problems, each with file and line. */
  readonly lastError?: { readonly at: string; readonly issues: readonly RuleIssue[] };
}

/**
 * Loads the rules: from the paths given, or the built-in example when there are none. `parse` defaults
 * to parsing on this thread (at start, before anything is served); reloads parse off-thread.
 * `subdirectories`: read the directories' subdirectories too (envoy mode's runtime directory).
 */
export function loadConfig(
  paths: readonly string[],
  parse?: LoadRulesOptions['parse'],
  subdirectories = false,
): Promise<LoadResult> {
  if (paths.length === 0) return Promise.resolve(parseRules([{ file: EXAMPLE_CONFIG_NAME, text: EXAMPLE_CONFIG }]));
  return loadRules(paths, { subdirectories, ...(parse === undefined ? {} : { parse }) });
}

/** Tracks the config: the current status, reloads on demand and on file changes. */
export interface ConfigSource {
  readonly status: ConfigStatus;
  /** Loads again; applies the result when valid, else keeps the last good rules and records why. */
  reload(): Promise<LoadResult>;
  /** Starts watching the files (no-op for the example); returns a function that stops. */
  watch(): () => void;
}

/** Options of {@link createConfigSource} beyond its callbacks. */
export interface ConfigSourceOptions {
  /** Parses rule files on reload. @default parseOffThread (a worker thread, bounded in time and heap) */
  parse?: LoadRulesOptions['parse'];
  /** Merge files of one domain (envoy's MERGE_DOMAIN_CONFIG), with the default `parse`. @default false */
  mergeDomains?: boolean;
  /**
   * A directory (often a symlink) whose replacement means "reload", as envoy ratelimit's RUNTIME_ROOT
   * with RUNTIME_WATCH_ROOT: its parent is watched for the swap, and each swap watches the new target.
   */
  root?: string;
  /**
   * Read and watch the subdirectories of the directories given too, as envoy ratelimit's runtime loader
   * walks its config directory. @default false
   */
  subdirectories?: boolean;
  /**
   * A load that finds no rule file at all means no domains, not a failure that keeps the last rules: envoy mode,
   * which starts with an empty config directory and whose runtime simply has no keys once the files are gone.
   * @default false
   */
  noFilesIsEmpty?: boolean;
}

/** No rules: what a load that found no file means under `noFilesIsEmpty`. */
export const NO_RULES: LoadResult & { ok: true } = { ok: true, ruleSet: { domains: new Map(), files: [] }, files: [] };

/** True when loading failed only because the paths hold no rule file. */
export function foundNoFiles(result: LoadResult): boolean {
  return !result.ok && result.files.length === 0 && result.issues.every((i) => i.code === RULE_ISSUE_CODES.noFiles);
}

/**
 * Creates the config tracker around the first good load, calling `apply` with every later good RuleSet.
 * A reload that fails for any reason — problems in the files, a file too large or too complex, an
 * exception anywhere in loading or applying — changes nothing but `status.lastError`: the last good
 * rules stay, and so do their counters (they live in the store, under rule identities).
 */
export function createConfigSource(
  paths: readonly string[],
  first: { ruleSet: RuleSet; files: readonly string[] },
  apply: (ruleSet: RuleSet) => void,
  report: (result: LoadResult) => void,
  options: ConfigSourceOptions = {},
): ConfigSource {
  const mergeDomains = options.mergeDomains === true;
  const subdirectories = options.subdirectories === true;
  const parse = options.parse ?? ((sources) => parseOffThread(sources, { mergeDomains }));
  const watchFiles = () => watchRules(paths, { parse, onReload: take, subdirectories });
  let status: ConfigStatus = {
    source: paths.length === 0 ? 'example' : 'files',
    paths,
    files: first.files,
    loadedAt: new Date().toISOString(),
  };
  const take = (loaded: LoadResult): LoadResult => {
    // Issues quote what they read; the status is shown without a token (src/rules/public-issues.ts).
    let result = options.noFilesIsEmpty === true && foundNoFiles(loaded) ? NO_RULES : publicResult(loaded);
    if (result.ok) {
      try {
        apply(result.ruleSet);
        status = { source: status.source, paths, files: result.files, loadedAt: new Date().toISOString() };
      } catch (error) {
        result = publicResult(failure(paths, error));
      }
    }
    if (!result.ok) status = { ...status, lastError: { at: new Date().toISOString(), issues: result.issues } };
    report(result);
    return result;
  };
  return {
    get status() {
      return status;
    },
    async reload() {
      let result: LoadResult;
      try {
        result = await loadConfig(paths, parse, subdirectories);
      } catch (error) {
        result = failure(paths, error);
      }
      return take(result);
    },
    watch() {
      if (paths.length === 0) return () => {};
      let watcher = watchFiles();
      // fs.watch resolves a symlink once, when the watch starts: after a swap of the root, the old watches
      // see only the old target's files. So each swap watches afresh (the new target) and reloads.
      const rootWatch =
        options.root === undefined
          ? undefined
          : watchSwap(options.root, () => {
              watcher.close();
              watcher = watchFiles();
              void watcher.reload();
            });
      return () => {
        watcher.close();
        rootWatch?.close();
      };
    },
  };
}

/** Watches `path`'s parent for `path` itself being replaced (a symlink swap); undefined when it cannot. */
function watchSwap(path: string, onSwap: () => void): FSWatcher | undefined {
  const full = resolve(path);
  try {
    const w = watch(dirname(full), { persistent: false }, (_event, name) => {
      if (name === null || name === basename(full)) onSwap();
    });
    w.on('error', () => w.close());
    return w;
  } catch {
    return undefined;
  }
}

/** A failed load for an exception thrown while loading or applying rules. */
function failure(paths: readonly string[], error: unknown): LoadResult {
  const why = error instanceof Error ? error.message : String(error);
  return {
    ok: false,
    issues: [
      {
        code: RULE_ISSUE_CODES.loadFailed,
        message: `loading the rules failed: ${why}; the rules in use stay`,
        file: paths.join(', '),
        line: 0,
        column: 0,
      },
    ],
    files: [],
  };
}

/** `file:line:column code message` for each problem, one per line (what `sluice validate` prints). */
export function formatIssues(issues: readonly RuleIssue[]): string {
  return issues.map((i) => `${i.file}:${i.line}:${i.column} ${i.code} ${i.message}`).join('\n');
}
