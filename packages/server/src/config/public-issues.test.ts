import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRules } from 'sluice/rules';
import { MAX_ISSUE_MESSAGE_CHARS, MAX_QUOTED_CHARS, publicIssue, publicResult } from './public-issues.js';

/** The issues the library reports for one file. */
function issuesOf(text: string) {
  const result = parseRules([{ file: '/etc/sluice/rules.yaml', text }]);
  assert.equal(result.ok, false);
  return result.ok ? [] : result.issues;
}

describe('publicIssue', () => {
  it('never quotes a file that is one string, and keeps its file, line and code', () => {
    const [issue] = issuesOf(`SLUICE_ADMIN_TOKEN=secret-${'x'.repeat(400_000)}`).map(publicIssue);
    assert.deepEqual(
      { code: issue?.code, file: issue?.file, line: issue?.line },
      { code: 'ERR_SLUICE_RULES_WRONG_TYPE', file: '/etc/sluice/rules.yaml', line: 1 },
    );
    assert.match(issue?.message ?? '', /^\(top level\): expected a map, got a string of 400026 characters/);
    assert.doesNotMatch(issue?.message ?? '', /SLUICE|secret/);
  });

  it('caps quoted values and the map keys a path is made of', () => {
    const unit = issuesOf(
      `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: ${'z'.repeat(500)}, requests_per_unit: 1 }\n`,
    ).map(publicIssue)[0];
    assert.match(unit?.message ?? '', new RegExp(`: 'z{${MAX_QUOTED_CHARS}}…' is not a unit`));
    const field = issuesOf(`domain: d\n${'k'.repeat(300)}: 1\n`).map(publicIssue)[0];
    assert.match(field?.message ?? '', new RegExp(`^\\(top level\\)\\.k{${MAX_QUOTED_CHARS}}…: unknown field`));
  });

  it('caps any message, and leaves short ones as they are', () => {
    const long = { code: 'X', message: `a ${'b '.repeat(500)}`, file: 'f', line: 1, column: 1 };
    assert.equal(publicIssue(long).message.length, MAX_ISSUE_MESSAGE_CHARS + 1);
    const short = { code: 'X', message: "unit: 'dayz' is not a unit", file: 'f', line: 1, column: 1 };
    assert.equal(publicIssue(short), short);
    const ok = parseRules([{ file: 'f', text: 'domain: d\ndescriptors: []\n' }]);
    assert.equal(publicResult(ok), ok);
  });
});
