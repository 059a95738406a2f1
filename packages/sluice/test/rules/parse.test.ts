/** Loading details: envoy configs load unchanged, YAML 1.1 as envoy reads it, JSON, directories. */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { loadRules, parseRules, RULE_ISSUE_CODES } from '../../src/rules/index.js';
import { harness, rules } from './helpers.js';

const fixtures = resolve(import.meta.dirname, '../fixtures/rules/valid');

describe('loading rules', () => {
  it('loads a directory (yaml, yml, json; no dot-files, no subdirectories) plus a single file', async () => {
    const result = await loadRules([resolve(fixtures, 'envoy'), resolve(fixtures, 'sluice.yaml')]);
    assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
    assert.deepEqual(
      result.files.map((f) => f.slice(fixtures.length + 1)),
      ['envoy/edge.yml', 'envoy/mongo.yaml', 'sluice.yaml'],
    );
    assert.deepEqual([...result.ruleSet.domains.keys()], ['edge_proxy_per_ip', 'mongo_cps', 'api']);
  });

  it('an envoy config answers as envoy ratelimit would', async () => {
    const result = await loadRules(resolve(fixtures, 'envoy'));
    assert.ok(result.ok);
    const h = harness(result.ruleSet);
    // The office address is allow-listed; any other address gets 10 per second.
    for (let i = 0; i < 10; i++)
      assert.equal((await h.one('edge_proxy_per_ip', ['remote_address', '1.2.3.4'])).code, 'OK');
    assert.equal((await h.one('edge_proxy_per_ip', ['remote_address', '1.2.3.4'])).code, 'OVER_LIMIT');
    for (let i = 0; i < 20; i++) {
      assert.equal((await h.one('edge_proxy_per_ip', ['remote_address', '50.0.0.5'])).code, 'OK');
    }
    const nested = await h.one('edge_proxy_per_ip', ['to_cluster', 'checkout'], ['remote_address', '1.2.3.4']);
    assert.deepEqual(
      [nested.ruleName, nested.currentLimit?.unit, nested.limitRemaining],
      ['checkout-per-ip', 'MINUTE', 19],
    );
  });

  it('reads YAML as envoy ratelimit does: numbers as strings where strings belong, yes/no, merge keys', async () => {
    const h = harness(
      rules(`
domain: yaml-details
descriptors:
  - key: status
    value: 200
    rate_limit: &two { unit: minute, requests_per_unit: 2 }
  - key: version
    value: 1.10
    shadow_mode: yes
    rate_limit:
      <<: *two
      requests_per_unit: 1
  - key: empty
    value: ""
    rate_limit: { unit: hour, requests_per_unit: 3 }
  - key: release
    value: 2024-01-31
    rate_limit: { unit: day, requests_per_unit: 3 }
`),
    );
    assert.equal((await h.one('yaml-details', ['status', '200'])).currentLimit?.requestsPerUnit, 2);
    const version = await h.one('yaml-details', ['version', '1.10']);
    assert.deepEqual([version.currentLimit?.requestsPerUnit, version.currentLimit?.unit], [1, 'MINUTE']);
    await h.one('yaml-details', ['version', '1.10']);
    assert.equal((await h.one('yaml-details', ['version', '1.10'])).shadow, true);
    // A YAML 1.1 timestamp is a value like any other, as written.
    assert.equal((await h.one('yaml-details', ['release', '2024-01-31'])).currentLimit?.unit, 'DAY');
    // An empty value is no value: a bare key that matches anything.
    assert.equal((await h.one('yaml-details', ['empty', 'whatever'])).currentLimit?.unit, 'HOUR');
  });

  it('reads JSON, with positions', () => {
    const ok = parseRules([
      {
        file: 'api.json',
        text: '{"domain":"api","descriptors":[{"key":"user","rate_limit":{"unit":"second","requests_per_unit":3}}]}',
      },
    ]);
    assert.ok(ok.ok);
    const bad = parseRules([
      { file: 'api.json', text: '{\n  "domain": "api",\n  "descriptors": [{ "key": "user", "rate": 1 }]\n}' },
    ]);
    assert.equal(bad.ok, false);
    if (!bad.ok)
      assert.deepEqual(
        bad.issues.map((i) => [i.code, i.line, i.column]),
        [[RULE_ISSUE_CODES.unknownField, 3, 36]],
      );
  });

  it('accepts envoy-only fields: detailed_metric, unit: unknown with unlimited, requests_per_unit left out (= 0)', async () => {
    const h = harness(
      rules(`
domain: envoy-quirks
descriptors:
  - key: metered
    detailed_metric: true
    rate_limit: { unit: second, requests_per_unit: 1 }
  - key: free
    rate_limit: { unlimited: true, unit: unknown }
  - key: forgot
    rate_limit: { unit: second }
  - key: nothing
    rate_limit:
http:
`),
    );
    assert.equal((await h.one('envoy-quirks', ['nothing', 'x'])).currentLimit, undefined);
    assert.equal((await h.one('envoy-quirks', ['free', 'x'])).limitRemaining, 4_294_967_295);
    assert.equal((await h.one('envoy-quirks', ['forgot', 'x'])).code, 'OVER_LIMIT');
    assert.equal(h.engine.describeRules()[0]?.detailedMetric, true);
    assert.equal((await h.one('envoy-quirks', ['metered', 'x'])).detailedMetric, true);
  });

  it('reports wrong types everywhere, naming the field path', () => {
    const result = parseRules([
      {
        file: 'types.yaml',
        text: `domain: [not, a, string]
descriptors:
  key: should-be-a-list
`,
      },
      {
        file: 'types2.yaml',
        text: 'domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n    rate_limit: []\n',
      },
      { file: 'empty.yaml', text: '' },
      { file: 'list.yaml', text: '- domain: d\n' },
      { file: 'two.yaml', text: 'domain: a\n---\ndomain: b\n' },
    ]);
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.deepEqual(
      result.issues.map((i) => [i.file, i.code, i.line, i.message.split(':')[0]]),
      [
        ['types.yaml', RULE_ISSUE_CODES.wrongType, 1, 'domain'],
        ['types.yaml', RULE_ISSUE_CODES.wrongType, 3, 'descriptors'],
        ['types2.yaml', RULE_ISSUE_CODES.wrongType, 4, 'descriptors[0].shadow_mode'],
        ['types2.yaml', RULE_ISSUE_CODES.wrongType, 5, 'descriptors[0].rate_limit'],
        ['empty.yaml', RULE_ISSUE_CODES.emptyDomain, 1, 'the file is empty; it needs at least domain'],
        ['list.yaml', RULE_ISSUE_CODES.wrongType, 1, '(top level)'],
        ['two.yaml', RULE_ISSUE_CODES.badYaml, 2, 'not valid YAML'],
      ],
    );
  });

  it('a sliding log over its entry bound is an invalid limit that names the sliding window', () => {
    const result = parseRules([
      {
        file: 'log.yaml',
        text: 'domain: log\ndescriptors:\n  - key: k\n    rate_limit: { period: 1h, requests_per_unit: 20000, algorithm: sliding-log }\n',
      },
    ]);
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.deepEqual(
      result.issues.map((i) => [i.code, i.line, i.column]),
      [[RULE_ISSUE_CODES.invalidLimit, 4, 50]],
    );
    assert.match(result.issues[0]?.message ?? '', /requests_per_unit: .*at most 10000.*'sliding-window'/);
  });
});
