/**
 * The rules' `http.priorities` and `http.adaptive.priorities`: valid routes and names read with their lines, and
 * each problem with its code and line.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRules } from '../parse-rules.js';

const parse = (routes: string) => parseRules([{ file: 'p.yaml', text: `domain: gw\nhttp:\n  priorities:\n${routes}` }]);

/** Each `[routes text, code, line]`: the text is refused, its first issue with that code on that line. */
function expectFirstIssues(cases: readonly [string, string, number][]): void {
  for (const [text, code, line] of cases) {
    const result = parse(text);
    const issue = result.ok ? undefined : result.issues[0];
    assert.deepEqual([issue?.code, issue?.line], [code, line], text);
  }
}

describe('rules: http.priorities', () => {
  it('reads each route with its method (upper-cased), priority, file and line', () => {
    const result = parse(
      '    - { path_prefix: /pay, method: post, priority: critical }\n    - { path_prefix: /, priority: normal }\n',
    );
    assert.ok(result.ok);
    assert.deepEqual(result.ruleSet.domains.get('gw')?.priorityRoutes, [
      { pathPrefix: '/pay', method: 'POST', priority: 'critical', file: 'p.yaml', line: 4 },
      { pathPrefix: '/', priority: 'normal', file: 'p.yaml', line: 5 },
    ]);
  });

  it('reports each problem with a code and a line', () => {
    const cases: [string, string, number][] = [
      ['    - { path_prefix: /pay, priority: urgent }\n', 'ERR_SLUICE_RULES_INVALID_VALUE', 4],
      ['    - { priority: batch }\n', 'ERR_SLUICE_RULES_INVALID_VALUE', 4],
      ['    - { path_prefix: pay, priority: batch }\n', 'ERR_SLUICE_RULES_INVALID_VALUE', 4],
      ['    - { path_prefix: /pay }\n', 'ERR_SLUICE_RULES_INVALID_VALUE', 4],
      ['    - { path_prefix: /pay, method: "GET /", priority: batch }\n', 'ERR_SLUICE_RULES_INVALID_VALUE', 4],
      ['    - { path_prefix: /pay, priority: batch, weight: 2 }\n', 'ERR_SLUICE_RULES_UNKNOWN_FIELD', 4],
      ['    - { path_prefix: /a, priority: batch }\n'.repeat(257), 'ERR_SLUICE_RULES_INVALID_VALUE', 4],
    ];
    expectFirstIssues(cases);
  });

  it('reads http.adaptive.priorities in order, and routes may name them', () => {
    const result = parse(
      '    - { path_prefix: /pay, priority: gold }\n  adaptive:\n    priorities: { gold: 0.6, silver: 0.3, bronze: 0.1 }\n',
    );
    assert.ok(result.ok, JSON.stringify(result.ok ? '' : result.issues));
    const rules = result.ruleSet.domains.get('gw');
    assert.deepEqual(rules?.adaptivePriorities, {
      priorities: [
        { name: 'gold', share: 0.6 },
        { name: 'silver', share: 0.3 },
        { name: 'bronze', share: 0.1 },
      ],
      file: 'p.yaml',
      line: 5,
    });
    assert.equal(rules?.priorityRoutes?.[0]?.priority, 'gold');
  });

  it('reports bad custom priorities with a code and a line', () => {
    const route = '    - { path_prefix: /pay, priority: gold }\n';
    const cases: [string, string, number][] = [
      // A route naming a default priority when the file names its own.
      [
        '    - { path_prefix: /pay, priority: critical }\n  adaptive:\n    priorities: { gold: 1 }\n',
        'ERR_SLUICE_RULES_INVALID_VALUE',
        4,
      ],
      // A route naming a priority nobody declared.
      [route, 'ERR_SLUICE_RULES_INVALID_VALUE', 4],
      [`${route}  adaptive:\n    priorities: { gold: 0.7, silver: 0.4 }\n`, 'ERR_SLUICE_RULES_INVALID_VALUE', 6],
      [`${route}  adaptive:\n    priorities: { gold: 0 }\n`, 'ERR_SLUICE_RULES_INVALID_VALUE', 6],
      [`${route}  adaptive:\n    priorities: { gold: high }\n`, 'ERR_SLUICE_RULES_WRONG_TYPE', 6],
      [`${route}  adaptive:\n    priorities: { Gold!: 0.5, gold: 0.5 }\n`, 'ERR_SLUICE_RULES_INVALID_VALUE', 6],
      [`${route}  adaptive:\n    priorities: [gold]\n`, 'ERR_SLUICE_RULES_WRONG_TYPE', 6],
      [`${route}  adaptive:\n    priorities: {}\n`, 'ERR_SLUICE_RULES_INVALID_VALUE', 6],
      [`${route}  adaptive: { queue: 3, priorities: { gold: 1 } }\n`, 'ERR_SLUICE_RULES_UNKNOWN_FIELD', 5],
      [`${route}  adaptive: {}\n`, 'ERR_SLUICE_RULES_MISSING_FIELD', 5],
      [
        `${route}  adaptive:\n    priorities: {${Array.from({ length: 17 }, (_, i) => ` p${i}: 0.01`).join(',')} }\n`,
        'ERR_SLUICE_RULES_INVALID_VALUE',
        6,
      ],
    ];
    expectFirstIssues(cases);
  });

  it('across files: one file names the priorities, and every file routes to them', () => {
    const gold = { file: 'a.yaml', text: 'domain: a\nhttp:\n  adaptive:\n    priorities: { gold: 0.5, lead: 0.5 }\n' };
    const ok = parseRules([
      gold,
      { file: 'b.yaml', text: 'domain: b\nhttp:\n  priorities:\n    - { path_prefix: /, priority: lead }\n' },
    ]);
    assert.ok(ok.ok);
    const other = parseRules([
      gold,
      { file: 'b.yaml', text: 'domain: b\nhttp:\n  priorities:\n    - { path_prefix: /, priority: batch }\n' },
    ]);
    assert.deepEqual(other.ok ? [] : other.issues.map((i) => [i.code, i.file, i.line]), [
      ['ERR_SLUICE_RULES_INVALID_VALUE', 'b.yaml', 4],
    ]);
    assert.match(other.ok ? '' : (other.issues[0]?.message ?? ''), /gold, lead, from a\.yaml:3/);
    const twice = parseRules([gold, { ...gold, file: 'c.yaml', text: gold.text.replace('domain: a', 'domain: c') }]);
    assert.deepEqual(twice.ok ? [] : twice.issues.map((i) => [i.code, i.file, i.line]), [
      ['ERR_SLUICE_RULES_CONFLICTING_FIELDS', 'c.yaml', 3],
    ]);
  });

  it('merged files of one domain (mergeDomains) keep both routes, and one declaration of names', () => {
    const a = { file: 'a.yaml', text: 'domain: m\nhttp:\n  adaptive:\n    priorities: { gold: 0.5, lead: 0.5 }\n' };
    const b = { file: 'b.yaml', text: 'domain: m\nhttp:\n  priorities:\n    - { path_prefix: /, priority: lead }\n' };
    const merged = parseRules([a, b], { mergeDomains: true });
    assert.ok(merged.ok);
    const rules = merged.ruleSet.domains.get('m');
    assert.deepEqual([rules?.adaptivePriorities?.file, rules?.priorityRoutes?.[0]?.priority], ['a.yaml', 'lead']);
    const twice = parseRules([a, { ...a, file: 'c.yaml' }], { mergeDomains: true });
    assert.deepEqual(twice.ok ? [] : twice.issues.map((i) => [i.code, i.file, i.line]), [
      ['ERR_SLUICE_RULES_CONFLICTING_FIELDS', 'c.yaml', 3],
    ]);
    // A route of the second file naming an undeclared priority is found, not dropped.
    const typo = parseRules([a, { ...b, text: b.text.replace('lead', 'led') }], { mergeDomains: true });
    assert.deepEqual(typo.ok ? [] : typo.issues.map((i) => [i.file, i.line]), [['b.yaml', 4]]);
  });
});
