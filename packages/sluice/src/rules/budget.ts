/**
 * The bounds on what loading rules may cost (file size, nodes read with aliases counted at every use, issues listed),
 * so a hostile rule file cannot stall or flood a load.
 */
import { RULE_ISSUE_CODES as C } from './codes.js';
import type { RuleIssue } from './types.js';

/**
 * Largest rule file read, in bytes. Larger files are refused unread (`ERR_SLUICE_RULES_FILE_TOO_LARGE`):
 * parsing YAML costs about 0.7 s per MB, and a Kubernetes ConfigMap (where rules usually live) holds at
 * most 1 MiB anyway.
 */
export const MAX_RULE_FILE_BYTES = 8 * 1024 * 1024;

/**
 * Most fields and list items read from one file, counting every use of an alias (`*name`) or merge key
 * (`<<`) afresh: a 600-byte "alias bomb" that lists the previous level ten times, nine levels deep,
 * stands for a billion nodes. Past this budget the file is refused (`ERR_SLUICE_RULES_TOO_COMPLEX`).
 * An 8 MB file of 80,000 plain descriptors reads about 480,000.
 */
export const MAX_RULE_NODES = 1_000_000;

/** Most problems listed for one load; the rest are counted in a last `ERR_SLUICE_RULES_TOO_MANY_ISSUES`. */
export const MAX_REPORTED_ISSUES = 100;

/** Thrown (and caught by the parser) when a file spends its node budget. */
export class RuleBudgetExceeded extends Error {
  constructor(readonly offset: number) {
    super('rule node budget exceeded');
  }
}

/** Collects issues, keeping the first `MAX_REPORTED_ISSUES` and counting the others. */
export class IssueList {
  readonly kept: RuleIssue[] = [];
  /** The first issue not kept, for where the summary points. */
  private firstDropped: RuleIssue | undefined;
  private dropped = 0;

  get size(): number {
    return this.kept.length + this.dropped;
  }

  add(issue: RuleIssue): void {
    if (this.kept.length < MAX_REPORTED_ISSUES) this.kept.push(issue);
    else {
      this.firstDropped ??= issue;
      this.dropped++;
    }
  }

  /** Takes over another list's issues (kept ones first, in their order) and its count of left-out ones. */
  merge(other: IssueList): void {
    for (const issue of other.kept) this.add(issue);
    this.firstDropped ??= other.firstDropped;
    this.dropped += other.dropped;
  }

  /** The kept issues, and one more saying how many were left out (at the first of them). */
  toArray(): RuleIssue[] {
    const first = this.firstDropped;
    if (first === undefined) return this.kept;
    return [
      ...this.kept,
      {
        code: C.tooManyIssues,
        message: `and ${this.dropped} more problem${this.dropped === 1 ? '' : 's'} not listed (only the first ${MAX_REPORTED_ISSUES} are); the next one is here: ${first.code} ${first.message}`,
        file: first.file,
        line: first.line,
        column: first.column,
      },
    ];
  }
}

/**
 * Deepest descriptor nesting (a `descriptors:` list inside a descriptor counts one level). Deeper files
 * are refused (`ERR_SLUICE_RULES_TOO_COMPLEX`, at the list past the bound), the same at start, by
 * `sluice validate` and on a reload: without a bound, how deep a file could go depended on the stack of
 * the thread that read it. Rules rarely need more than a few levels.
 */
export const MAX_DESCRIPTOR_DEPTH = 64;

/**
 * Deepest collection nesting of a rule file's YAML, checked before it is composed: two per descriptor level
 * (its map and its `descriptors:` list) and a few above (the top-level map, a limit's fields). A file past it
 * is past {@link MAX_DESCRIPTOR_DEPTH} too.
 */
export const MAX_YAML_NESTING = 2 * MAX_DESCRIPTOR_DEPTH + 8;
