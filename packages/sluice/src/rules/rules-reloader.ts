/**
 * The reloading behind `watchRules`: file events debounced into reloads, one reload at a time (a change during one
 * loads once more after it), skipped when the files did not change, a valid result applied and every result reported.
 */

import { RULE_ISSUE_CODES } from './codes.js';
import { DirectoryWatchers } from './directory-watchers.js';
import type { RulesEngine } from './engine-types.js';
import { type LoadRulesOptions, MAX_RULE_DIRECTORY_DEPTH, readSources, withReadIssues } from './load-rules.js';
import type { LoadResult, RuleSet } from './types.js';

type Parse = NonNullable<LoadRulesOptions['parse']>;

/** Where a reload's result goes (`watchRules`' options of the same names). */
export interface ReloadTargets {
  onReload(result: LoadResult): void;
  engine?: RulesEngine | undefined;
  /** Read (and watch) the subdirectories of the directories given too. */
  subdirectories?: boolean | undefined;
}

/** One reload's result, and whether the files differed from the last reload's. */
interface Loaded {
  result: LoadResult;
  changed: boolean;
}

/** The state of one watch: its directories, its pending timer, the reload in progress and the last good rules. */
export class RulesReloader {
  lastGood: RuleSet | undefined;
  private readonly watchers: DirectoryWatchers;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<LoadResult> | undefined;
  /** A change arrived during the reload in progress. */
  private again = false;
  private closed = false;
  /** The last reload's files and read issues, to skip reporting a reload that changed nothing. */
  private lastSignature: string | undefined;

  constructor(
    private readonly paths: readonly string[],
    private readonly debounceMs: number,
    private readonly parse: Parse,
    private readonly options: ReloadTargets,
  ) {
    const depth = options.subdirectories === true ? MAX_RULE_DIRECTORY_DEPTH : 0;
    this.watchers = new DirectoryWatchers(paths, () => this.schedule(), depth);
  }

  /** Watches every directory not watched yet (one missing now is tried again after each reload). */
  watch(): void {
    this.watchers.ensure();
  }

  /** Reloads now (`force`: report even when nothing changed) or joins the reload in progress. */
  run(force: boolean): Promise<LoadResult> {
    if (this.running) {
      // A change arrived while loading: load once more afterwards, so the last write always wins.
      this.again = true;
      return this.running;
    }
    this.running = this.reloadUntilSettled(force);
    return this.running;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.watchers.close();
  }

  /** A file event: reload after `debounceMs` of quiet. */
  private schedule(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // load() never rejects; only an exception thrown by onReload itself could land here, and a file
      // event must not turn it into an unhandled rejection that ends the process.
      this.run(false).catch(() => {});
    }, this.debounceMs);
    this.timer.unref();
  }

  private async reloadUntilSettled(force: boolean): Promise<LoadResult> {
    let outcome: Loaded;
    let changed = force;
    try {
      do {
        this.again = false;
        outcome = await this.load();
        changed ||= outcome.changed;
      } while (this.again && !this.closed);
    } finally {
      this.running = undefined;
    }
    // A directory created since the last watch may have got files before its watch began: look once more.
    if (this.watchers.ensure()) this.schedule();
    if (changed && !this.closed) this.report(outcome.result);
    return outcome.result;
  }

  private async load(): Promise<Loaded> {
    try {
      const { sources, issues } = await readSources(this.paths, {
        subdirectories: this.options.subdirectories === true,
      });
      const signature = JSON.stringify([sources, issues]);
      const changed = signature !== this.lastSignature;
      this.lastSignature = signature;
      return { result: withReadIssues(issues, await this.parse(sources), sources), changed };
    } catch (error) {
      // Whatever went wrong, it is a failed reload (the rules in use stay), never an unhandled rejection.
      this.lastSignature = undefined;
      return { result: loadFailed(this.paths, error), changed: true };
    }
  }

  private report(result: LoadResult): void {
    if (result.ok) {
      this.lastGood = result.ruleSet;
      this.options.engine?.setRuleSet(result.ruleSet);
    }
    this.options.onReload(result);
  }
}

/** A failed LoadResult for an exception thrown while loading. */
function loadFailed(paths: readonly string[], error: unknown): LoadResult {
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
