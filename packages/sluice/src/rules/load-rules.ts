/**
 * `loadRules`: rule files and directories read from disk the way envoy ratelimit reads its config directory, then
 * parsed with every problem in every file reported at once.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { IssueList, MAX_RULE_FILE_BYTES } from './budget.js';
import { RULE_ISSUE_CODES as C } from './codes.js';
import { parseRules } from './parse-rules.js';
import type { LoadResult, ParseOptions, RuleIssue, RuleSource } from './types.js';

const RULE_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

/**
 * Most levels of subdirectories read below a directory given, with `subdirectories`: deep enough for any
 * runtime layout, and a bound on how much of a tree one load (and one watch) walks.
 */
export const MAX_RULE_DIRECTORY_DEPTH = 8;

/** True for a file name `loadRules` reads from a directory. */
export function isRuleFile(name: string): boolean {
  return !name.startsWith('.') && RULE_EXTENSIONS.has(extname(name).toLowerCase());
}

/**
 * Loads rules from files and directories. A directory contributes every `.yaml`, `.yml` and `.json`
 * file directly in it (not dot-files: a Kubernetes ConfigMap mount keeps older copies in `..data`-style
 * folders), in name order; with `subdirectories`, those of its subdirectories too — as envoy ratelimit loads
 * its config directory.
 * Every problem in every file is reported at once.
 *
 * @example
 * const loaded = await loadRules(['./config', './extra/edge.yaml']);
 * if (loaded.ok) engine.setRuleSet(loaded.ruleSet);
 * else for (const i of loaded.issues) console.error(`${i.file}:${i.line}:${i.column} ${i.code} ${i.message}`);
 */
export async function loadRules(
  paths: string | readonly string[],
  options: LoadRulesOptions = {},
): Promise<LoadResult> {
  const { sources, issues } = await readSources(paths, { subdirectories: options.subdirectories === true });
  const parse =
    options.parse ?? ((list: RuleSource[]) => parseRules(list, { mergeDomains: options.mergeDomains === true }));
  return withReadIssues(issues, await parse(sources), sources);
}

/** Options of `loadRules`. */
export interface LoadRulesOptions extends ParseOptions {
  /**
   * Parses the files' text. @default parseRules, on this thread; the service passes one that parses in
   * a worker thread, so a large file does not stall the requests it answers meanwhile. A custom `parse`
   * applies `mergeDomains` itself.
   */
  parse?: (sources: RuleSource[]) => LoadResult | Promise<LoadResult>;
  /**
   * Reads a directory's subdirectories too (up to 8 levels deep; not dot-directories,
   * not directories reached through a symlink), as envoy ratelimit's runtime loader walks its config
   * directory. @default false: only the files directly in each directory given
   */
  subdirectories?: boolean;
}

/** A parse result with the problems of reading the files put first (capped like the parser's own). */
export function withReadIssues(
  readIssues: readonly RuleIssue[],
  parsed: LoadResult,
  sources: readonly RuleSource[],
): LoadResult {
  if (readIssues.length === 0) return parsed;
  const issues = new IssueList();
  for (const issue of readIssues) issues.add(issue);
  return {
    ok: false,
    issues: [...issues.toArray(), ...(parsed.ok ? [] : parsed.issues)],
    files: sources.map((s) => s.file),
  };
}

/** Reads the rule files under `paths`; problems reading them are issues, not exceptions. */
export async function readSources(
  paths: string | readonly string[],
  options: { subdirectories?: boolean } = {},
): Promise<{ sources: RuleSource[]; issues: RuleIssue[] }> {
  const depth = options.subdirectories === true ? MAX_RULE_DIRECTORY_DEPTH : 0;
  const list = typeof paths === 'string' ? [paths] : [...paths];
  const issues: RuleIssue[] = [];
  const sources: RuleSource[] = [];
  const whole = (file: string, code: string, message: string) =>
    issues.push({ code, message, file, line: 0, column: 0 });
  if (list.length === 0) whole('', C.noFiles, 'no rule file or directory given');
  const files: string[] = [];
  for (const path of list) {
    try {
      const info = await stat(path);
      if (info.isDirectory()) {
        const inDir = await ruleFilesIn(path, depth);
        if (inDir.length === 0) whole(path, C.noFiles, `${path}: no .yaml, .yml or .json file in this directory`);
        files.push(...inDir);
      } else files.push(path);
    } catch (error) {
      whole(path, C.readFailed, `${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    }
  }
  for (const file of [...new Set(files)]) {
    try {
      // Checked before reading (a huge file is never loaded) and after (it may have grown meanwhile).
      const size = Math.max((await stat(file)).size, 0);
      const text = size > MAX_RULE_FILE_BYTES ? undefined : await readFile(file, 'utf8');
      if (text === undefined || text.length > MAX_RULE_FILE_BYTES) {
        whole(
          file,
          C.fileTooLarge,
          `${file}: ${text?.length ?? size} bytes; rule files are read up to ${MAX_RULE_FILE_BYTES} bytes (split the rules into several files, or write them with less repetition)`,
        );
        continue;
      }
      sources.push({ file, text });
    } catch (error) {
      whole(file, C.readFailed, `${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    }
  }
  return { sources, issues };
}

/**
 * The rule files in `dir`, in name order, and those of its subdirectories down to `depth` more levels, each
 * where its name sorts (the order of Go's filepath.Walk, which envoy ratelimit's runtime loader uses).
 * File symlinks are followed (ConfigMap files are links into ..data); dot-entries, special files, broken or
 * looping links and symlinked directories are skipped (filepath.Walk does not descend symlinked directories either).
 */
async function ruleFilesIn(dir: string, depth: number): Promise<string[]> {
  const files: string[] = [];
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (depth > 0 && !entry.name.startsWith('.')) files.push(...(await ruleFilesIn(path, depth - 1).catch(vanished)));
    } else if (isRuleFile(entry.name) && (await stat(path).catch(() => undefined))?.isFile()) files.push(path);
  }
  return files;
}

/** No files from a subdirectory removed while it was being read (its removal reloads again); other errors stand. */
function vanished(error: NodeJS.ErrnoException): string[] {
  if (error.code === 'ENOENT') return [];
  throw error;
}
