/**
 * Fuzzing the rules parser with random YAML — maps, lists and scalars drawn from the format's own
 * vocabulary, anchors, aliases (also to anchors not defined yet), `<<` merge keys, random damage to the
 * text — and with alias bombs of random width and depth. Whatever the text, parseRules returns (never
 * throws, never runs on: each case ends within the node budget), every issue carries a known code and
 * a position inside the file, and at most MAX_REPORTED_ISSUES + 1 are listed. Seeded, bounded in count.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type LoadResult, MAX_REPORTED_ISSUES, parseRules, RULE_ISSUE_CODES } from '../../src/rules/index.js';

const CODES = new Set<string>(Object.values(RULE_ISSUE_CODES));
const FIELDS = [
  'domain',
  'descriptors',
  'key',
  'value',
  'rate_limit',
  'rate_limits',
  'unit',
  'requests_per_unit',
  'period',
  'algorithm',
  'burst',
  'unlimited',
  'name',
  'replaces',
  'shadow_mode',
  'share_threshold',
  'fail',
  'http',
  'actions',
  'bogus',
];
const SCALARS = ['minute', 'second', '10', '0', '-1', '1e9', 'yes', 'no', '~', "''", 'v*', '5m', 'sliding-log', 'x'];

type Tree = { s: string } | { m: [string, Tree][] } | { l: Tree[] } | { alias: number } | { anchor: Tree };

const tree: fc.Arbitrary<Tree> = fc.letrec<{ node: Tree }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...SCALARS).map((s): Tree => ({ s })),
    fc.array(fc.tuple(fc.constantFrom(...FIELDS, '<<'), tie('node')), { maxLength: 5 }).map((m): Tree => ({ m })),
    fc.array(tie('node'), { maxLength: 5 }).map((l): Tree => ({ l })),
    fc.nat(6).map((alias): Tree => ({ alias })),
    tie('node').map((anchor): Tree => ({ anchor })),
  ),
})).node;

/** Renders a tree as flow-style YAML; anchors are numbered in order, aliases may point anywhere. */
function render(t: Tree, anchors: { n: number }): string {
  if ('s' in t) return t.s;
  if ('alias' in t) return `*a${t.alias}`;
  if ('anchor' in t) return `&a${anchors.n++} ${render(t.anchor, anchors)}`;
  if ('l' in t) return `[${t.l.map((x) => render(x, anchors)).join(', ')}]`;
  return `{${t.m.map(([k, v]) => `${k}: ${render(v, anchors)}`).join(', ')}}`;
}

/** A damaged copy: some characters deleted or replaced by YAML punctuation. */
function damage(text: string, cuts: readonly [number, string][]): string {
  let out = text;
  for (const [at, ch] of cuts) {
    const i = at % (out.length + 1);
    out = out.slice(0, i) + ch + out.slice(i + 1);
  }
  return out;
}

function check(result: LoadResult, text: string): void {
  if (result.ok) return;
  assert.ok(result.issues.length > 0);
  assert.ok(result.issues.length <= MAX_REPORTED_ISSUES + 1, `${result.issues.length} issues listed`);
  const lines = text.split('\n').length;
  for (const issue of result.issues) {
    assert.ok(CODES.has(issue.code), issue.code);
    assert.ok(issue.line >= 0 && issue.line <= lines + 1, `line ${issue.line} of ${lines}`);
    assert.equal(typeof issue.message, 'string');
  }
}

describe('rules parser fuzz', () => {
  it('random YAML with anchors, aliases and merge keys: always an answer, never an exception', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...FIELDS, '<<'), tree), { maxLength: 6 }),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom('', '[', ']', '{', '}', ':', '&', '*', ',', '\n', '"', '-')), {
          maxLength: 3,
        }),
        (top, cuts) => {
          const anchors = { n: 0 };
          const body = top.map(([k, v]) => `${k}: ${render(v, anchors)}`).join('\n');
          const text = damage(`domain: fuzz\n${body}\n`, cuts);
          check(parseRules([{ file: 'fuzz.yaml', text }]), text);
        },
      ),
      { seed: 20261123, numRuns: 400 },
    );
  });

  it('alias bombs of random width and depth end at the node budget, with a code', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 12 }), fc.integer({ min: 2, max: 12 }), (width, depth) => {
        const lines = ['domain: bomb', 'descriptors:', '  - &l0 {key: k0, value: v, rate_limit: {unit: minute}}'];
        for (let i = 1; i <= depth; i++) {
          const refs = Array.from({ length: width }, () => `*l${i - 1}`).join(', ');
          lines.push(`  - &l${i} {key: k${i}, descriptors: [${refs}]}`);
        }
        const text = `${lines.join('\n')}\n`;
        const result = parseRules([{ file: 'bomb.yaml', text }]);
        check(result, text);
        // Small ones fit the budget (and fail only on their duplicates); large ones are refused as such.
        if (width ** depth > 2_000_000) {
          assert.equal(result.ok, false);
          if (!result.ok)
            assert.deepEqual(
              result.issues.map((i) => i.code),
              [RULE_ISSUE_CODES.tooComplex],
            );
        }
      }),
      { seed: 1212, numRuns: 6 },
    );
  });

  it('merge-key chains and 10,000 problems in one file stay bounded', () => {
    const merges = ['domain: merge', 'base0: &b0 {key: k, value: v}'];
    for (let i = 1; i <= 30; i++) merges.push(`base${i}: &b${i} {<<: [*b${i - 1}, *b${i - 1}], name: n${i}}`);
    const text = `${merges.join('\n')}\ndescriptors: [*b30]\n`;
    check(parseRules([{ file: 'merge.yaml', text }]), text);
    const many = `domain: many\ndescriptors: [${Array.from({ length: 10_000 }, () => '{value: v}').join(',')}]\n`;
    const result = parseRules([{ file: 'many.yaml', text: many }]);
    check(result, many);
    assert.equal(result.ok ? 0 : result.issues.at(-1)?.code, RULE_ISSUE_CODES.tooManyIssues);
  });
});
