/**
 * Parsing a `descriptors:` list, recursively, into an indexed level of the descriptor tree (exact values, wildcards,
 * bare keys), with the rule identities that keep counters across reloads.
 */
import { MAX_DESCRIPTOR_DEPTH } from '../budget.js';
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { MetricLevel } from '../metric-key.js';
import type { DescriptorLevel, DescriptorNode, DescriptorPathEntry, FailMode } from '../types.js';
import { compileWildcard, isWildcard } from '../wildcard.js';
import { parseFail } from './parse-fail.js';
import { parseRuleLimits, type RuleLimits } from './parse-rule-limits.js';
import { type Field, joinPath, type Reader } from './reader.js';

const DESCRIPTOR_FIELDS = [
  'key',
  'value',
  'rate_limit',
  'rate_limits',
  'descriptors',
  'shadow_mode',
  'detailed_metric',
  'share_threshold',
  'value_to_metric',
  'quota_mode',
  'metadata',
  'fail',
] as const;

const SEPARATOR = /[%/=|#~]/;

/** Escapes the separators of a rule identity, so distinct paths never share one. */
export function encodePart(s: string): string {
  // Most parts have no separator: a test is cheaper than a replace with a callback (this runs per request).
  if (!SEPARATOR.test(s)) return s;
  return s.replace(/[%/=|#~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** The identity of a descriptor path within a domain: `domain|key=value/key2`. */
export function pathId(domain: string, path: readonly DescriptorPathEntry[]): string {
  const parts = path.map((e) =>
    e.value === undefined ? encodePart(e.key) : `${encodePart(e.key)}=${encodePart(e.value)}`,
  );
  return `${encodePart(domain)}|${parts.join('/')}`;
}

/** An empty level, for domains without descriptors. */
export const EMPTY_LEVEL: DescriptorLevel = { exact: new Map(), wildcards: [], bare: new Map(), all: [] };

/** Context of one level of descriptors. */
interface LevelContext {
  domain: string;
  parentPath: readonly DescriptorPathEntry[];
  /** The metric levels of the parent path (envoy stats keys). */
  parentMetric?: readonly MetricLevel[];
  fail: FailMode | undefined;
}

/** A level being filled in. */
interface MutableLevel {
  exact: Map<string, Map<string, DescriptorNode>>;
  wildcards: DescriptorNode[];
  bare: Map<string, DescriptorNode>;
  all: DescriptorNode[];
}

/** An item of a YAML list as the reader gives it. */
type ListItem = NonNullable<ReturnType<Reader['list']>>[number];

/** Validates a `descriptors:` list into an indexed level, reporting every problem in it and below it. */
export function parseDescriptors(
  r: Reader,
  field: Field | undefined,
  path: string,
  ctx: LevelContext,
): DescriptorLevel {
  if (field === undefined) return EMPTY_LEVEL;
  // Aliases can nest what the YAML text does not (tooDeepAt bounds the text), so the bound is kept here too.
  if (ctx.parentPath.length >= MAX_DESCRIPTOR_DEPTH) {
    r.report(
      C.tooComplex,
      `descriptors nest more than ${MAX_DESCRIPTOR_DEPTH} levels deep here (the bound on descriptor nesting); flatten the rules`,
      field.at,
    );
    return EMPTY_LEVEL;
  }
  const items = r.list(field, path);
  if (items === undefined) return EMPTY_LEVEL;
  const level: MutableLevel = { exact: new Map(), wildcards: [], bare: new Map(), all: [] };
  const seen = new Set<string>();
  for (const [i, item] of items.entries()) {
    const node = parseDescriptor(r, item, `${path}[${i}]`, ctx, seen);
    if (node !== undefined) addToLevel(level, node);
  }
  return level;
}

/** A descriptor's own fields, as read (every problem in them reported). */
interface DescriptorFields {
  key: string | undefined;
  value: string | undefined;
  shadow: boolean;
  detailedMetric: boolean;
  valueToMetric: boolean;
  quotaMode: boolean;
  metadata: Record<string, unknown> | undefined;
  shareThreshold: boolean;
  fail: FailMode | undefined;
}

/** What a descriptor node is built from beside its own fields: its limits, children and place in the tree. */
interface NodeParts {
  rules: RuleLimits;
  metricLevels: MetricLevel[];
  children: DescriptorLevel;
  path: DescriptorPathEntry[];
  id: string;
}

/** One descriptor and everything below it; undefined when it has no key or repeats one at its level. */
function parseDescriptor(
  r: Reader,
  item: ListItem,
  itemPath: string,
  ctx: LevelContext,
  seen: Set<string>,
): DescriptorNode | undefined {
  const f = r.fields(item.node, itemPath, DESCRIPTOR_FIELDS, item.at);
  if (f === undefined) return undefined;
  const p = (name: string) => joinPath(itemPath, name);
  const d = readDescriptorFields(r, f, p, item.at, ctx.fail);
  const { key, value } = d;
  const entry: DescriptorPathEntry = value === undefined ? { key: key ?? '' } : { key: key ?? '', value };
  const path = [...ctx.parentPath, entry];
  const id = pathId(ctx.domain, path);
  const metricLevels = metricLevelsOf(ctx.parentMetric, d);
  const rules = parseRuleLimits(r, f, p, id);
  const children = parseDescriptors(r, f.get('descriptors'), p('descriptors'), {
    domain: ctx.domain,
    parentPath: path,
    parentMetric: metricLevels,
    fail: d.fail,
  });
  if (key === undefined || key === '') return undefined;
  if (!firstAtLevel(r, key, value, itemPath, item, seen)) return undefined;
  return descriptorNode(r, item, key, d, { rules, metricLevels, children, path, id });
}

/** Reads a descriptor's own fields; `fail` is inherited from its parent when it has none. */
function readDescriptorFields(
  r: Reader,
  f: Map<string, Field>,
  p: (name: string) => string,
  at: ListItem['at'],
  parentFail: FailMode | undefined,
): DescriptorFields {
  const keyField = f.get('key');
  const key = r.string(keyField, p('key'));
  if (key === '' || keyField === undefined) {
    r.report(C.emptyKey, `${p('key')}: every descriptor needs a non-empty key`, keyField?.at ?? at);
  }
  // An empty value is the same as none, as in envoy ratelimit.
  const value = r.string(f.get('value'), p('value')) || undefined;
  const shadow = r.boolean(f.get('shadow_mode'), p('shadow_mode')) ?? false;
  const detailedMetric = r.boolean(f.get('detailed_metric'), p('detailed_metric')) ?? false;
  const valueToMetric = r.boolean(f.get('value_to_metric'), p('value_to_metric')) ?? false;
  const quotaMode = r.boolean(f.get('quota_mode'), p('quota_mode')) ?? false;
  const metadataField = f.get('metadata');
  const metadata = metadataField === undefined ? undefined : r.mapValue(metadataField, p('metadata'));
  const shareField = f.get('share_threshold');
  const shareThreshold = r.boolean(shareField, p('share_threshold')) ?? false;
  if (shareThreshold && !isWildcard(value)) {
    r.report(
      C.shareThresholdWithoutWildcard,
      `${p('share_threshold')}: only a value with a * wildcard can share a threshold${value === undefined ? ' (this descriptor has no value)' : ` ('${value}' has no *)`}`,
      shareField?.at ?? at,
    );
  }
  const failField = f.get('fail');
  const fail = failField ? (parseFail(r, failField, p('fail')) ?? parentFail) : parentFail;
  return { key, value, shadow, detailedMetric, valueToMetric, quotaMode, metadata, shareThreshold, fail };
}

/** The metric levels of a descriptor's path (envoy stats keys): its parent's, then its own. */
function metricLevelsOf(parent: readonly MetricLevel[] | undefined, d: DescriptorFields): MetricLevel[] {
  const { value } = d;
  return [
    ...(parent ?? []),
    {
      key: d.key ?? '',
      ...(value === undefined ? {} : { value }),
      wildcard: isWildcard(value),
      valueToMetric: d.valueToMetric,
      shareThreshold: d.shareThreshold,
    },
  ];
}

/** Whether (key, value) is new at this level (remembered); a repeat is reported. */
function firstAtLevel(
  r: Reader,
  key: string,
  value: string | undefined,
  itemPath: string,
  item: ListItem,
  seen: Set<string>,
): boolean {
  const composite = `${key}\u0000${value ?? ''}`;
  if (seen.has(composite)) {
    r.report(
      C.duplicateDescriptor,
      `${itemPath}: duplicate descriptor ${value === undefined ? `key '${key}'` : `'${key}' = '${value}'`} at this level`,
      item.at,
    );
    return false;
  }
  seen.add(composite);
  return true;
}

/** The node, one object literal (one shape for every node). */
function descriptorNode(r: Reader, item: ListItem, key: string, d: DescriptorFields, parts: NodeParts): DescriptorNode {
  const { value, detailedMetric, metadata, fail } = d;
  const { limits, unlimited, unlimitedName, replaces } = parts.rules;
  const { metricLevels } = parts;
  const { line, col } = r.position(item.at);
  return {
    key,
    ...(value === undefined ? {} : { value }),
    ...(isWildcard(value) ? { wildcard: compileWildcard(value) } : {}),
    limits,
    unlimited,
    replaces,
    ...(unlimitedName === undefined ? {} : { unlimitedName }),
    shadow: d.shadow,
    detailedMetric,
    valueToMetric: d.valueToMetric,
    quotaMode: d.quotaMode,
    ...(metadata === undefined ? {} : { metadata }),
    metricLevels,
    dynamicMetric: detailedMetric || metricLevels.some((l) => l.valueToMetric),
    shareThreshold: d.shareThreshold,
    ...(fail === undefined ? {} : { fail }),
    children: parts.children,
    path: parts.path,
    id: parts.id,
    file: r.file,
    line,
    column: col,
  };
}

/** Indexes a node in its level: by key for a bare key, among the wildcards, or by key and value. */
function addToLevel(level: MutableLevel, node: DescriptorNode): void {
  level.all.push(node);
  if (node.value === undefined) level.bare.set(node.key, node);
  else if (node.wildcard) level.wildcards.push(node);
  else {
    let byValue = level.exact.get(node.key);
    if (byValue === undefined) {
      byValue = new Map();
      level.exact.set(node.key, byValue);
    }
    byValue.set(node.value, node);
  }
}
