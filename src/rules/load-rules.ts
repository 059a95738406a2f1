import type { LoadResult } from './types.js';

/** Loads rules from files and directories (work in progress). */
export async function loadRules(paths: string | readonly string[]): Promise<LoadResult> {
  const list = typeof paths === 'string' ? [paths] : [...paths];
  return { ok: true, ruleSet: { domains: new Map(), files: list }, files: list };
}
