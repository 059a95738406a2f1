/**
 * Parsing a `descriptors:` list, recursively, into an indexed level of the descriptor tree (exact values, wildcards,
 * bare keys), with the rule identities that keep counters across reloads.
 */
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { MetricLevel } from '../metric-key.js';
import type { DescriptorLevel, DescriptorNode, DescriptorPathEntry, FailMode, RuleLimit } from '../types.js';
import { compileWildcard, isWildcard } from '../wildcard.js';
import { parseFail } from './parse-fail.js';
import { parseLimit, RATE_LIMIT_FIELDS, RATE_LIMITS_ITEM_FIELDS } from './parse-limit.js';
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

/** Validates a `descriptors:` list into an indexed level, reporting every problem in it and below it. */
export function parseDescriptors(
  r: Reader,
  field: Field | undefined,
  path: string,
  ctx: LevelContext,
): DescriptorLevel {
  if (field === undefined) return EMPTY_LEVEL;
  const items = r.list(field, path);
  if (items === undefined) return EMPTY_LEVEL;
  const exact = new Map<string, Map<string, DescriptorNode>>();
  const wildcards: DescriptorNode[] = [];
  const bare = new Map<string, DescriptorNode>();
  const all: DescriptorNode[] = [];
  const seen = new Set<string>();

  for (const [i, item] of items.entries()) {
    const itemPath = `${path}[${i}]`;
    const f = r.fields(item.node, itemPath, DESCRIPTOR_FIELDS, item.at);
    if (f === undefined) continue;
    const p = (name: string) => joinPath(itemPath, name);
    const keyField = f.get('key');
    const key = r.string(keyField, p('key'));
    if (key === '' || keyField === undefined) {
      r.report(C.emptyKey, `${p('key')}: every descriptor needs a non-empty key`, keyField?.at ?? item.at);
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
        shareField?.at ?? item.at,
      );
    }
    const failField = f.get('fail');
    const fail = failField ? (parseFail(r, failField, p('fail')) ?? ctx.fail) : ctx.fail;
    const entry: DescriptorPathEntry = value === undefined ? { key: key ?? '' } : { key: key ?? '', value };
    const nodePath = [...ctx.parentPath, entry];
    const id = pathId(ctx.domain, nodePath);
    const metricLevels: MetricLevel[] = [
      ...(ctx.parentMetric ?? []),
      {
        key: key ?? '',
        ...(value === undefined ? {} : { value }),
        wildcard: isWildcard(value),
        valueToMetric,
        shareThreshold,
      },
    ];

    const single = f.get('rate_limit');
    const several = f.get('rate_limits');
    if (single && several) {
      r.report(C.conflictingFields, `${p('rate_limits')}: give either rate_limit or rate_limits, not both`, several.at);
    }
    // Counter slots: a single rate_limit is slot 0, the same as the first item of rate_limits, so
    // turning one into the other keeps the counters.
    const limits: RuleLimit[] = [];
    let unlimited = false;
    let unlimitedName: string | undefined;
    const replaces: string[] = [];
    if (single && single.value !== undefined) {
      const parsed = parseLimit(r, single.value, single.at, p('rate_limit'), RATE_LIMIT_FIELDS, id, '0');
      if (parsed.limit) limits.push(parsed.limit);
      unlimited = parsed.unlimited;
      if (unlimited) unlimitedName = parsed.name;
      replaces.push(...parsed.replaces);
    } else if (several && !single) {
      const list = r.list(several, p('rate_limits')) ?? [];
      const names = new Set<string>();
      for (const [j, limitItem] of list.entries()) {
        const limitPath = `${p('rate_limits')}[${j}]`;
        const parsed = parseLimit(r, limitItem.node, limitItem.at, limitPath, RATE_LIMITS_ITEM_FIELDS, id, String(j));
        if (parsed.name !== undefined) {
          if (names.has(parsed.name)) {
            r.report(
              C.conflictingFields,
              `${limitPath}.name: '${parsed.name}' is used twice in this rule`,
              limitItem.at,
            );
          }
          names.add(parsed.name);
        }
        if (parsed.limit) limits.push(parsed.limit);
        replaces.push(...parsed.replaces);
      }
    }

    const children = parseDescriptors(r, f.get('descriptors'), p('descriptors'), {
      domain: ctx.domain,
      parentPath: nodePath,
      parentMetric: metricLevels,
      fail,
    });
    if (key === undefined || key === '') continue;

    const composite = `${key}\u0000${value ?? ''}`;
    if (seen.has(composite)) {
      r.report(
        C.duplicateDescriptor,
        `${itemPath}: duplicate descriptor ${value === undefined ? `key '${key}'` : `'${key}' = '${value}'`} at this level`,
        item.at,
      );
      continue;
    }
    seen.add(composite);
    const { line, col } = r.position(item.at);
    const node: DescriptorNode = {
      key,
      ...(value === undefined ? {} : { value }),
      ...(isWildcard(value) ? { wildcard: compileWildcard(value) } : {}),
      limits,
      unlimited,
      replaces,
      ...(unlimitedName === undefined ? {} : { unlimitedName }),
      shadow,
      detailedMetric,
      valueToMetric,
      quotaMode,
      ...(metadata === undefined ? {} : { metadata }),
      metricLevels,
      dynamicMetric: detailedMetric || metricLevels.some((l) => l.valueToMetric),
      shareThreshold,
      ...(fail === undefined ? {} : { fail }),
      children,
      path: nodePath,
      id,
      file: r.file,
      line,
      column: col,
    };
    all.push(node);
    if (value === undefined) bare.set(key, node);
    else if (node.wildcard) wildcards.push(node);
    else {
      let byValue = exact.get(key);
      if (byValue === undefined) {
        byValue = new Map();
        exact.set(key, byValue);
      }
      byValue.set(value, node);
    }
  }
  return { exact, wildcards, bare, all };
}
