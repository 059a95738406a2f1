/**
 * The parser's reader over one YAML document: typed field access that reports each problem with its line and column and
 * returns a neutral value, so validation goes on and finds every problem at once.
 */
import type { Document, LineCounter, Node as YamlNode } from 'yaml';
import { isAlias, isMap, isScalar, isSeq } from 'yaml';
import { IssueList, MAX_RULE_NODES, RuleBudgetExceeded } from '../budget.js';
import { RULE_ISSUE_CODES } from '../codes.js';

/** A YAML node, as parsed. */
export type Node = YamlNode;

/** One field of a map: its key node (for "unknown field") and its value node (for everything else). */
export interface Field {
  readonly name: string;
  readonly keyNode: Node;
  /** The value, aliases resolved; undefined for `name:` with nothing after it. */
  readonly value: Node | undefined;
  /** Where the value was written (the alias, when it is one), for positions. */
  readonly at: Node;
}

/**
 * Reads one parsed file and collects issues with their positions. Every reader method reports what is
 * wrong and returns a neutral value, so validation carries on and reports every problem at once.
 */
export class Reader {
  /** The problems found, at most `MAX_REPORTED_ISSUES` of them kept. */
  readonly issues = new IssueList();
  /** Fields and list items read so far, aliases counted at every use (see MAX_RULE_NODES). */
  private nodes = 0;
  private readonly aliases = new Map<object, Node | undefined>();

  constructor(
    readonly file: string,
    private readonly doc: Document.Parsed,
    private readonly lines: LineCounter,
  ) {}

  /** Records an issue at `at` (a node or a source offset; undefined = start of the file). */
  report(code: string, message: string, at: Node | number | undefined): void {
    const offset = typeof at === 'number' ? at : (at?.range?.[0] ?? 0);
    const { line, col } = this.lines.linePos(offset);
    this.issues.add({ code, message, file: this.file, line, column: col });
  }

  /** Counts `n` nodes read at `at`; throws RuleBudgetExceeded once the file has read too many. */
  private spend(n: number, at: Node): void {
    this.nodes += n;
    if (this.nodes > MAX_RULE_NODES) throw new RuleBudgetExceeded(at.range?.[0] ?? 0);
  }

  /** 1-based line and column of a node. */
  position(at: Node | undefined): { line: number; col: number } {
    return this.lines.linePos(at?.range?.[0] ?? 0);
  }

  /** The node behind an alias (`*anchor`), or the node itself. */
  resolve(node: unknown): Node | undefined {
    if (node === null || node === undefined) return undefined;
    if (!isAlias(node)) return node as Node;
    // yaml's Alias.resolve walks the whole document each time; an alias used a million times (through
    // other aliases) must cost one walk, not a million.
    if (this.aliases.has(node)) return this.aliases.get(node);
    const target = node.resolve(this.doc) as Node | undefined;
    this.aliases.set(node, target);
    return target;
  }

  /**
   * The fields of a map, checked against `known`; `<<` merge keys are applied (fields written in the map
   * win). Reports a non-map as a wrong type and every unknown field. Returns undefined for a non-map.
   */
  fields(node: Node | undefined, path: string, known: readonly string[], at?: Node): Map<string, Field> | undefined {
    if (!isMap(node)) {
      this.report(RULE_ISSUE_CODES.wrongType, `${path}: expected a map, got ${describe(node)}`, at ?? node);
      return undefined;
    }
    this.spend(node.items.length, node);
    const out = new Map<string, Field>();
    const merged: Node[] = [];
    for (const pair of node.items) {
      const keyNode = pair.key as Node;
      if (isScalar(keyNode) && keyNode.source === '<<' && typeof keyNode.value === 'symbol') {
        merged.push(...this.mergeSources(pair.value as Node, path));
        continue;
      }
      const name = isScalar(keyNode) ? String(keyNode.value) : undefined;
      if (name === undefined) {
        this.report(RULE_ISSUE_CODES.wrongType, `${path}: map keys must be plain names`, keyNode);
        continue;
      }
      if (!known.includes(name)) {
        this.report(
          RULE_ISSUE_CODES.unknownField,
          `${joinPath(path, name)}: unknown field (known here: ${known.join(', ')})`,
          keyNode,
        );
        continue;
      }
      const at = (pair.value as Node | null) ?? keyNode;
      const value = this.resolve(pair.value);
      // `name:` with nothing after it is absent, as in envoy ratelimit's decoder (a nil pointer).
      out.set(name, { name, keyNode, value: isScalar(value) && value.value === null ? undefined : value, at });
    }
    // Merged maps fill in only what the map itself does not say, as YAML merge keys do.
    for (const source of merged) {
      const inner = this.fields(source, path, known, source);
      for (const [name, field] of inner ?? []) if (!out.has(name)) out.set(name, field);
    }
    return out;
  }

  private mergeSources(value: Node, path: string): Node[] {
    const resolved = this.resolve(value);
    if (isSeq(resolved)) {
      this.spend(resolved.items.length, resolved);
      return resolved.items.map((item) => this.resolve(item)).filter((n) => n !== undefined);
    }
    if (isMap(resolved)) return [resolved];
    this.report(RULE_ISSUE_CODES.wrongType, `${path}: a << merge key takes a map or a list of maps`, value);
    return [];
  }

  /** The items of a list (aliases resolved); undefined (after reporting) for a non-list. */
  list(field: Field, path: string): { node: Node | undefined; at: Node }[] | undefined {
    if (field.value === undefined) return [];
    if (!isSeq(field.value)) {
      this.report(RULE_ISSUE_CODES.wrongType, `${path}: expected a list, got ${describe(field.value)}`, field.at);
      return undefined;
    }
    this.spend(field.value.items.length, field.value);
    return field.value.items.map((item) => ({ node: this.resolve(item), at: (item as Node) ?? field.value }));
  }

  /**
   * A string field. Any other scalar is taken as written (`value: 200` is the string "200", not 200), as
   * envoy ratelimit's YAML decoder does; an empty value reads as "".
   */
  string(field: Field | undefined, path: string): string | undefined {
    if (field === undefined) return undefined;
    const v = field.value;
    if (v === undefined) return '';
    if (isScalar(v)) {
      if (v.value === null) return '';
      if (typeof v.value === 'string') return v.value;
      // Numbers, booleans, YAML 1.1 timestamps (2001-12-14) and sexagesimals (1:20): as written.
      return v.source ?? String(v.value);
    }
    this.report(RULE_ISSUE_CODES.wrongType, `${path}: expected a string, got ${describe(v)}`, field.at);
    return undefined;
  }

  /** A boolean field (`true`/`false`, and YAML 1.1's `yes`/`no`/`on`/`off`); empty reads as false. */
  boolean(field: Field | undefined, path: string): boolean | undefined {
    if (field === undefined) return undefined;
    const v = field.value;
    if (v === undefined || (isScalar(v) && v.value === null)) return false;
    if (isScalar(v) && typeof v.value === 'boolean') return v.value;
    this.report(RULE_ISSUE_CODES.wrongType, `${path}: expected true or false, got ${describe(v)}`, field.at);
    return undefined;
  }

  /** A number field; undefined (after reporting) when it is not a number. */
  number(field: Field | undefined, path: string): number | undefined {
    if (field === undefined) return undefined;
    const v = field.value;
    if (isScalar(v) && typeof v.value === 'number') return v.value;
    this.report(RULE_ISSUE_CODES.wrongType, `${path}: expected a number, got ${describe(v)}`, field.at);
    return undefined;
  }

  /** A map field as plain data (`metadata:`), keys as strings; undefined (after reporting) for a non-map. */
  mapValue(field: Field, path: string): Record<string, unknown> | undefined {
    const v = field.value;
    if (v === undefined) return {};
    if (!isMap(v)) {
      this.report(RULE_ISSUE_CODES.wrongType, `${path}: expected a map, got ${describe(v)}`, field.at);
      return undefined;
    }
    return v.toJSON(this.doc) as Record<string, unknown>;
  }

  /** A scalar's raw value (string or number), for fields that take either (`period: 5m` or `period: 300000`). */
  scalar(field: Field | undefined, path: string): string | number | undefined {
    if (field === undefined) return undefined;
    const v = field.value;
    if (isScalar(v) && (typeof v.value === 'string' || typeof v.value === 'number')) return v.value;
    this.report(RULE_ISSUE_CODES.wrongType, `${path}: expected a number or a string, got ${describe(v)}`, field.at);
    return undefined;
  }
}

/** `a.b` / `a[0]` paths for messages. */
export function joinPath(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

/** A short description of what a node is, for "expected X, got Y" messages. */
export function describe(node: unknown): string {
  if (node === undefined || node === null) return 'nothing';
  if (isMap(node)) return 'a map';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) {
    const v = node.value;
    if (v === null) return 'nothing';
    if (typeof v === 'string') return `the string '${v}'`;
    if (typeof v === 'number' || typeof v === 'boolean') return `${typeof v} ${node.source ?? String(v)}`;
  }
  return 'something else';
}
