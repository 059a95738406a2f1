/**
 * One fixture per kind of config problem (test/fixtures/rules/invalid): each must be reported with its
 * stable code, at the line and column of the culprit. A fixture without an expectation fails the suite,
 * so every new fixture gets asserted.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import {
  formatRuleIssue,
  loadRules,
  MAX_DESCRIPTOR_DEPTH,
  MAX_REPORTED_ISSUES,
  MAX_RULE_FILE_BYTES,
  MAX_RULE_NODES,
  RULE_ISSUE_CODES,
} from '../../src/rules/index.js';

const dir = resolve(import.meta.dirname, '../fixtures/rules/invalid');

/** fixture → the one issue it must produce (file relative to the fixture, line, column). */
const EXPECTED: Record<
  string,
  // `total`: the fixture produces that many issues, and the one asserted is the last.
  { code: string; line: number; column: number; file?: string; mentions: RegExp; total?: number }
> = {
  'bad-yaml.yaml': { code: RULE_ISSUE_CODES.badYaml, line: 5, column: 1, mentions: /not valid YAML/ },
  'empty-domain.yaml': { code: RULE_ISSUE_CODES.emptyDomain, line: 1, column: 9, mentions: /domain/ },
  'duplicate-domain': {
    code: RULE_ISSUE_CODES.duplicateDomain,
    file: 'b.yaml',
    line: 2,
    column: 9,
    mentions: /'shared' is already defined in .*a\.yaml/,
  },
  'empty-key.yaml': {
    code: RULE_ISSUE_CODES.emptyKey,
    line: 5,
    column: 14,
    mentions: /descriptors\[0\]\.descriptors\[0\]\.key/,
  },
  'duplicate-descriptor.yaml': {
    code: RULE_ISSUE_CODES.duplicateDescriptor,
    line: 6,
    column: 5,
    mentions: /'database' = 'users'/,
  },
  'unknown-unit.yaml': {
    code: RULE_ISSUE_CODES.unknownUnit,
    line: 5,
    column: 13,
    mentions: /'fortnight' is not a unit/,
  },
  'unit-with-unlimited.yaml': { code: RULE_ISSUE_CODES.unitWithUnlimited, line: 6, column: 13, mentions: /unlimited/ },
  'replaces-self.yaml': { code: RULE_ISSUE_CODES.replacesSelf, line: 9, column: 17, mentions: /'per-user'/ },
  'replaces-empty.yaml': { code: RULE_ISSUE_CODES.replacesEmpty, line: 9, column: 17, mentions: /replaces\[0\]/ },
  'unknown-field.yaml': { code: RULE_ISSUE_CODES.unknownField, line: 6, column: 7, mentions: /request_per_unit/ },
  'wrong-type.json': { code: RULE_ISSUE_CODES.wrongType, line: 6, column: 62, mentions: /expected a number/ },
  'bad-duration.yaml': { code: RULE_ISSUE_CODES.badDuration, line: 5, column: 15, mentions: /'5 fortnights'/ },
  'unknown-algorithm.yaml': {
    code: RULE_ISSUE_CODES.unknownAlgorithm,
    line: 7,
    column: 18,
    mentions: /'token_bucket'/,
  },
  'share-threshold-without-wildcard.yaml': {
    code: RULE_ISSUE_CODES.shareThresholdWithoutWildcard,
    line: 5,
    column: 22,
    mentions: /has no \*/,
  },
  'missing-field.yaml': { code: RULE_ISSUE_CODES.missingField, line: 5, column: 7, mentions: /needs a unit/ },
  'conflicting-fields.yaml': {
    code: RULE_ISSUE_CODES.conflictingFields,
    line: 6,
    column: 15,
    mentions: /unit or period/,
  },
  'invalid-limit.yaml': { code: RULE_ISSUE_CODES.invalidLimit, line: 6, column: 26, mentions: /requests_per_unit/ },
  'invalid-burst.yaml': { code: RULE_ISSUE_CODES.invalidBurst, line: 7, column: 14, mentions: /take a burst/ },
  'invalid-value.yaml': { code: RULE_ISSUE_CODES.invalidValue, line: 4, column: 11, mentions: /'sometimes'/ },
  'invalid-action.yaml': { code: RULE_ISSUE_CODES.invalidAction, line: 5, column: 11, mentions: /one action name/ },
  'too-complex.yaml': {
    code: RULE_ISSUE_CODES.tooComplex,
    line: 6,
    column: 32,
    mentions: new RegExp(`more than ${MAX_RULE_NODES} fields and list items`),
  },
  // 65 levels of descriptors: the 65th level's list is past the bound, whatever thread reads the file.
  'too-deep.yaml': {
    code: RULE_ISSUE_CODES.tooComplex,
    line: 131,
    column: 259,
    mentions: new RegExp(`descriptors nest more than ${MAX_DESCRIPTOR_DEPTH} levels deep here`),
  },
  // 71 levels: refused from the YAML's nesting, before yaml's composer (which recurses per level) reads it.
  'too-deep-yaml.yaml': {
    code: RULE_ISSUE_CODES.tooComplex,
    line: 137,
    column: 273,
    mentions: new RegExp(`the YAML nests more than 136 levels deep here; descriptors may nest ${MAX_DESCRIPTOR_DEPTH}`),
  },
  'too-many-issues.yaml': {
    code: RULE_ISSUE_CODES.tooManyIssues,
    line: 3,
    column: 1215,
    mentions: /and 50 more problems not listed .* descriptors\[100\]\.key/,
    total: MAX_REPORTED_ISSUES + 1,
  },
};

describe('rules fixtures: one file per validation error', () => {
  it('every fixture has an expectation, and every expectation a fixture', () => {
    const fixtures = readdirSync(dir).filter((f) => f !== 'every-problem-at-once.yaml');
    assert.deepEqual(fixtures.sort(), Object.keys(EXPECTED).sort());
  });

  for (const [fixture, want] of Object.entries(EXPECTED)) {
    it(`${fixture} → ${want.code} at ${want.line}:${want.column}`, async () => {
      const result = await loadRules(join(dir, fixture));
      assert.equal(result.ok, false);
      if (result.ok) return;
      assert.equal(result.issues.length, want.total ?? 1, JSON.stringify(result.issues.slice(0, 3), null, 2));
      const issue = result.issues.at(-1);
      assert.equal(issue?.code, want.code);
      assert.equal(issue?.file, want.file ? join(dir, fixture, want.file) : join(dir, fixture));
      assert.deepEqual([issue?.line, issue?.column], [want.line, want.column]);
      assert.match(issue?.message ?? '', want.mentions);
      if (issue)
        assert.ok(formatRuleIssue(issue).startsWith(`${issue.file}:${want.line}:${want.column} ${want.code} `));
    });
  }

  it('reports every problem of a file at once, in reading order', async () => {
    const result = await loadRules(join(dir, 'every-problem-at-once.yaml'));
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.deepEqual(
      result.issues.map((i) => [i.code, i.line, i.column]),
      [
        [RULE_ISSUE_CODES.unknownUnit, 5, 25],
        [RULE_ISSUE_CODES.emptyKey, 6, 10],
        [RULE_ISSUE_CODES.unknownField, 9, 5],
        [RULE_ISSUE_CODES.unknownAlgorithm, 10, 66],
      ],
    );
  });

  it('reports problems in several files at once (here both also claim domain api)', async () => {
    const result = await loadRules([join(dir, 'unknown-unit.yaml'), join(dir, 'empty-key.yaml')]);
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.deepEqual(
      result.issues.map((i) => i.code),
      [RULE_ISSUE_CODES.unknownUnit, RULE_ISSUE_CODES.emptyKey, RULE_ISSUE_CODES.duplicateDomain],
    );
  });

  it('a missing path and an empty directory are issues too, not exceptions', async () => {
    const missing = await loadRules(join(dir, 'no-such-file.yaml'));
    assert.equal(missing.ok, false);
    if (!missing.ok)
      assert.deepEqual(
        missing.issues.map((i) => [i.code, i.line, i.column]),
        [[RULE_ISSUE_CODES.readFailed, 0, 0]],
      );
    const empty = mkdtempSync(join(tmpdir(), 'sluice-rules-empty-'));
    try {
      const result = await loadRules(empty);
      assert.equal(result.ok, false);
      if (!result.ok) assert.equal(result.issues[0]?.code, RULE_ISSUE_CODES.noFiles);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it(`a file over ${MAX_RULE_FILE_BYTES} bytes → ${RULE_ISSUE_CODES.fileTooLarge} for the whole file, unread`, async () => {
    // Generated, not committed: a sparse file of MAX_RULE_FILE_BYTES + 1 bytes takes no disk space.
    const tmp = mkdtempSync(join(tmpdir(), 'sluice-rules-large-'));
    try {
      const file = join(tmp, 'huge.yaml');
      writeFileSync(file, 'domain: huge\n');
      truncateSync(file, MAX_RULE_FILE_BYTES + 1);
      const result = await loadRules(file);
      assert.equal(result.ok, false);
      if (result.ok) return;
      assert.deepEqual(
        result.issues.map((i) => [i.code, i.file, i.line, i.column]),
        [[RULE_ISSUE_CODES.fileTooLarge, file, 0, 0]],
      );
      assert.match(result.issues[0]?.message ?? '', new RegExp(`${MAX_RULE_FILE_BYTES + 1} bytes`));
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
