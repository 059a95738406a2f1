import type { LoadResult } from './types.js';

/** Options of `watchRules`. */
export interface WatchRulesOptions {
  /** Called after each reload with its result; on failure keep the last good RuleSet. */
  onReload(result: LoadResult): void;
  /** Quiet time after the last change before reloading, in ms. @default 100 */
  debounceMs?: number;
}

/** A running watch. */
export interface RulesWatcher {
  close(): void;
}

/** Watches rule files and reloads them on change (work in progress). */
export function watchRules(_paths: string | readonly string[], _options: WatchRulesOptions): RulesWatcher {
  return { close() {} };
}
