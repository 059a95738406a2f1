/** The rules' `http.priorities`: valid routes read with their lines, and each problem with its code and line. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRules } from '../parse-rules.js';

const parse = (routes: string) => parseRules([{ file: 'p.yaml', text: `domain: gw\nhttp:\n  priorities:\n${routes}` }]);

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
    for (const [text, code, line] of cases) {
      const result = parse(text);
      assert.equal(result.ok, false, text);
      const issue = result.ok ? undefined : result.issues[0];
      assert.equal(issue?.code, code, text);
      assert.equal(issue?.line, line, text);
    }
  });
});
