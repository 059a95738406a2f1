import type { LoadResult, RuleIssue, RuleSet } from 'sluice/rules';
import { loadRules, parseRules, watchRules } from 'sluice/rules';
import { EXAMPLE_CONFIG, EXAMPLE_CONFIG_NAME } from './example-config.js';

/** Where the rules come from and how the last load went (for the admin API and the dashboard). */
export interface ConfigStatus {
  /** `files` for `--config`, `example` for the built-in example. */
  readonly source: 'files' | 'example';
  /** The paths given (files or directories). */
  readonly paths: readonly string[];
  /** The files the current rules were read from. */
  readonly files: readonly string[];
  /** When the current rules were loaded (ISO 8601). */
  readonly loadedAt: string;
  /** The last reload attempt, when it failed: the problems, each with file and line. */
  readonly lastError?: { readonly at: string; readonly issues: readonly RuleIssue[] };
}

/** Loads the rules: from the paths given, or the built-in example when there are none. */
export function loadConfig(paths: readonly string[]): Promise<LoadResult> {
  if (paths.length === 0) return Promise.resolve(parseRules([{ file: EXAMPLE_CONFIG_NAME, text: EXAMPLE_CONFIG }]));
  return loadRules(paths);
}

/** Tracks the config: the current status, reloads on demand and on file changes. */
export interface ConfigSource {
  readonly status: ConfigStatus;
  /** Loads again; applies the result when valid, else keeps the last good rules and records why. */
  reload(): Promise<LoadResult>;
  /** Starts watching the files (no-op for the example); returns a function that stops. */
  watch(): () => void;
}

/** Creates the config tracker around the first good load, calling `apply` with every later good RuleSet. */
export function createConfigSource(
  paths: readonly string[],
  first: { ruleSet: RuleSet; files: readonly string[] },
  apply: (ruleSet: RuleSet) => void,
  report: (result: LoadResult) => void,
): ConfigSource {
  let status: ConfigStatus = {
    source: paths.length === 0 ? 'example' : 'files',
    paths,
    files: first.files,
    loadedAt: new Date().toISOString(),
  };
  const take = (result: LoadResult) => {
    if (result.ok) {
      apply(result.ruleSet);
      status = { source: status.source, paths, files: result.files, loadedAt: new Date().toISOString() };
    } else {
      status = { ...status, lastError: { at: new Date().toISOString(), issues: result.issues } };
    }
    report(result);
  };
  return {
    get status() {
      return status;
    },
    async reload() {
      const result = await loadConfig(paths);
      take(result);
      return result;
    },
    watch() {
      if (paths.length === 0) return () => {};
      const watcher = watchRules(paths, { onReload: take });
      return () => watcher.close();
    },
  };
}

/** `file:line:column code message` for each problem, one per line (what `sluice validate` prints). */
export function formatIssues(issues: readonly RuleIssue[]): string {
  return issues.map((i) => `${i.file}:${i.line}:${i.column} ${i.code} ${i.message}`).join('\n');
}
