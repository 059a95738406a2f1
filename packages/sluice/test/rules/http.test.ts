/** The `http:` section: Envoy's route actions turning an HTTP request into descriptors. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { httpDescriptorsFor, parseRules, RULE_ISSUE_CODES, type RuleHttpRequest } from '../../src/rules/index.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import type { Store } from '../../src/stores/store.js';
import { harness, rules } from './helpers.js';

const req = (over: Partial<RuleHttpRequest> = {}): RuleHttpRequest => ({
  method: 'get',
  path: '/api/users/42?page=2&tag=a&tag=b',
  headers: { host: 'example.com', 'x-api-key': 'k1', 'x-tier': ['gold', 'silver'], 'content-length': '120' },
  remoteAddress: '203.0.113.9',
  ...over,
});

/** The entries of each descriptor made for domain `edge` from one list of actions. */
function entriesFor(actions: string, request: RuleHttpRequest = req()) {
  const set = rules(`domain: edge\nhttp:\n  rate_limits:\n    - actions:\n${actions}`);
  const out = httpDescriptorsFor(set, request);
  return out.length === 0 ? undefined : out[0]?.descriptors.map((d) => d.entries.map((e) => `${e.key}=${e.value}`));
}

/** The memory store answering every call with a promise, as a remote store does. */
function promisingStore(): Store {
  const memory = createMemoryStore({ sweepIntervalMs: 0 });
  return new Proxy(memory, {
    get(target, name) {
      if (name === 'synchronous') return false;
      const value = Reflect.get(target, name);
      return typeof value === 'function' ? (...args: unknown[]) => Promise.resolve(value.apply(target, args)) : value;
    },
  });
}

describe('http descriptors', () => {
  it('remote_address, normalising an IPv4-mapped IPv6 address', () => {
    assert.deepEqual(entriesFor('        - remote_address: {}\n'), [['remote_address=203.0.113.9']]);
    assert.deepEqual(entriesFor('        - remote_address:\n', req({ remoteAddress: '::ffff:10.1.2.3' })), [
      ['remote_address=10.1.2.3'],
    ]);
    assert.equal(entriesFor('        - remote_address: {}\n', req({ remoteAddress: 'not-an-ip' })), undefined);
  });

  it('masked_remote_address, with default and given prefix lengths', () => {
    const masked = '        - masked_remote_address: { v4_prefix_mask_len: 24, v6_prefix_mask_len: 56 }\n';
    assert.deepEqual(entriesFor(masked), [['masked_remote_address=203.0.113.0/24']]);
    assert.deepEqual(entriesFor(masked, req({ remoteAddress: '2001:db8:abcd:12ff:1:2:3:4' })), [
      ['masked_remote_address=2001:db8:abcd:1200::/56'],
    ]);
    assert.deepEqual(entriesFor('        - masked_remote_address: {}\n'), [['masked_remote_address=203.0.113.9/32']]);
  });

  it('request_headers: first value; a missing header drops the descriptor unless skip_if_absent', () => {
    assert.deepEqual(entriesFor('        - request_headers: { header_name: X-Api-Key, descriptor_key: key }\n'), [
      ['key=k1'],
    ]);
    assert.deepEqual(entriesFor('        - request_headers: { header_name: x-tier, descriptor_key: tier }\n'), [
      ['tier=gold'],
    ]);
    assert.equal(entriesFor('        - request_headers: { header_name: x-none, descriptor_key: n }\n'), undefined);
    assert.deepEqual(
      entriesFor(
        '        - generic_key: { descriptor_value: g }\n        - request_headers: { header_name: x-none, descriptor_key: n, skip_if_absent: true }\n',
      ),
      [['generic_key=g']],
    );
    assert.deepEqual(entriesFor('        - request_headers: { header_name: ":authority", descriptor_key: host }\n'), [
      ['host=example.com'],
    ]);
  });

  it('generic_key with its default and a given descriptor_key', () => {
    assert.deepEqual(entriesFor('        - generic_key: { descriptor_value: all }\n'), [['generic_key=all']]);
    assert.deepEqual(entriesFor('        - generic_key: { descriptor_value: all, descriptor_key: scope }\n'), [
      ['scope=all'],
    ]);
  });

  it('header_value_match: all matchers must match (or must not, with expect_match: false)', () => {
    const action = (headers: string, extra = '') =>
      entriesFor(
        `        - header_value_match:\n            descriptor_value: hit${extra}\n            headers:\n${headers}`,
      );
    assert.deepEqual(action('              - { name: ":path", prefix_match: /api/ }\n'), [['header_match=hit']]);
    assert.deepEqual(action('              - { name: ":method", exact_match: GET }\n'), [['header_match=hit']]);
    assert.equal(action('              - { name: ":path", prefix_match: /web/ }\n'), undefined);
    assert.deepEqual(
      action('              - { name: ":path", prefix_match: /web/ }\n', '\n            expect_match: false'),
      [['header_match=hit']],
    );
    assert.deepEqual(action('              - { name: x-tier, contains_match: "d,sil" }\n'), [['header_match=hit']]);
    assert.deepEqual(action('              - { name: content-length, range_match: { start: 100, end: 200 } }\n'), [
      ['header_match=hit'],
    ]);
    assert.deepEqual(action('              - { name: x-api-key, safe_regex_match: { regex: "k[0-9]+" } }\n'), [
      ['header_match=hit'],
    ]);
    assert.deepEqual(action('              - { name: x-missing, present_match: false }\n'), [['header_match=hit']]);
    assert.equal(action('              - { name: x-missing, present_match: true }\n'), undefined);
    assert.deepEqual(action('              - { name: x-api-key, exact_match: nope, invert_match: true }\n'), [
      ['header_match=hit'],
    ]);
    assert.deepEqual(action('              - { name: host, string_match: { suffix: .COM, ignore_case: true } }\n'), [
      ['header_match=hit'],
    ]);
  });

  it('query_parameters (and its alias query_parameter), and query_parameter_value_match', () => {
    assert.deepEqual(entriesFor('        - query_parameters: { query_parameter_name: page, descriptor_key: p }\n'), [
      ['p=2'],
    ]);
    assert.deepEqual(entriesFor('        - query_parameter: { query_parameter_name: tag, descriptor_key: t }\n'), [
      ['t=a'],
    ]);
    assert.equal(
      entriesFor('        - query_parameters: { query_parameter_name: none, descriptor_key: n }\n'),
      undefined,
    );
    assert.deepEqual(
      entriesFor(
        '        - query_parameter_value_match:\n            descriptor_value: paged\n            query_parameters: [{ name: page, string_match: { exact: "2" } }]\n',
      ),
      [['query_match=paged']],
    );
    const parsed = { query: { page: '7' } };
    assert.deepEqual(
      entriesFor('        - query_parameters: { query_parameter_name: page, descriptor_key: p }\n', req(parsed)),
      [['p=7']],
    );
  });

  it('path (without the query, optionally cut to its first segments) and method', () => {
    assert.deepEqual(entriesFor('        - method: {}\n        - path: {}\n'), [['method=GET', 'path=/api/users/42']]);
    assert.deepEqual(entriesFor('        - path: { segments: 2, descriptor_key: route }\n'), [['route=/api/users']]);
  });

  it('one descriptor per rate_limits item, per domain with an http section; hits_addend carried', () => {
    const set = rules(
      `
domain: edge
http:
  rate_limits:
    - actions: [{ remote_address: {} }]
    - actions: [{ request_headers: { header_name: x-absent, descriptor_key: a } }]
    - actions: [{ generic_key: { descriptor_value: heavy } }]
      hits_addend: { number: 5 }
`,
      'domain: no-http\n',
      'domain: other\nhttp:\n  rate_limits:\n    - actions: [{ method: {} }]\n',
    );
    assert.deepEqual(httpDescriptorsFor(set, req()), [
      {
        domain: 'edge',
        descriptors: [
          { entries: [{ key: 'remote_address', value: '203.0.113.9' }] },
          { entries: [{ key: 'generic_key', value: 'heavy' }], hitsAddend: 5 },
        ],
      },
      { domain: 'other', descriptors: [{ entries: [{ key: 'method', value: 'GET' }] }] },
    ]);
  });

  it('end to end: http descriptors decided by the engine', async () => {
    const h = harness(
      rules(`
domain: edge
http:
  rate_limits:
    - actions: [{ remote_address: {} }, { path: { segments: 1 } }]
descriptors:
  - key: remote_address
    descriptors:
      - key: path
        value: /login
        rate_limit: { unit: minute, requests_per_unit: 2 }
`),
    );
    const decide = async (path: string) => {
      const [forEdge] = httpDescriptorsFor(h.engine.ruleSet, req({ path }));
      return (await h.engine.shouldRateLimit(forEdge as never)).overallCode;
    };
    assert.deepEqual(
      [await decide('/login'), await decide('/login/x'), await decide('/login')],
      ['OK', 'OK', 'OVER_LIMIT'],
    );
    assert.equal(await decide('/home'), 'OK');
  });

  for (const [kind, store] of [
    ['memory store', undefined],
    ['store answering with promises', promisingStore()],
  ] as const) {
    it(`checkHttp (${kind}): every domain decided, the binding enforced rule described, shadow rules only reported`, async () => {
      const h = harness(
        rules(
          `
domain: edge
http:
  rate_limits:
    - actions: [{ remote_address: {} }]
    - actions: [{ generic_key: { descriptor_value: trial } }]
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 5, name: per-ip }
  - key: generic_key
    value: trial
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 1, name: trial }
`,
          `
domain: keys
http:
  rate_limits:
    - actions: [{ request_headers: { header_name: x-api-key, descriptor_key: key } }]
descriptors:
  - key: key
    rate_limit: { unit: second, requests_per_unit: 3, name: per-key }
`,
        ),
        store === undefined ? {} : { store },
      );
      const first = await h.engine.checkHttp({ ...req(), hitsAddend: 2 });
      assert.equal(first?.decision.allowed, true);
      // per-key has 1 of 3 left, per-ip 3 of 5: per-key binds and is the one described.
      assert.equal(first?.limitName, 'per-key');
      assert.deepEqual([first?.limit?.limit, first?.limit?.periodMs], [3, 1000]);
      assert.deepEqual(
        first?.decision.results?.map((r) => [r.name, r.decision.remaining]),
        [
          ['per-ip', 3],
          ['per-key', 1],
        ],
      );
      assert.deepEqual(
        first?.shadowed.map((s) => s.ruleName),
        ['trial'],
        'the shadow rule would have rejected 2 hits',
      );
      const second = await h.engine.checkHttp({ ...req(), hitsAddend: 2 });
      assert.deepEqual([second?.decision.allowed, second?.limitName], [false, 'per-key']);
      assert.equal(await h.engine.checkHttp(req({ path: '/', headers: {}, remoteAddress: 'not-an-ip' })), undefined);
      await assert.rejects(h.engine.checkHttp({ ...req(), hitsAddend: -1 }), /hitsAddend: -1 is not a whole number/);
    });
  }

  it('normalises the path before matching, and folds case and a trailing slash unless path_matching says not to', () => {
    const path = '        - path: {}\n';
    for (const spelling of [
      '/login',
      '//login',
      '/a/../login',
      '/./login',
      '/%6Cogin',
      '/LOGIN',
      '/Login/',
      '/login//',
      '/login;jsessionid=1',
      '/Login;x/',
      '/x/..;/login',
      '/x;a/..;b/login;c',
    ]) {
      assert.deepEqual(entriesFor(path, req({ path: `${spelling}?x=1` })), [['path=/login']], spelling);
    }
    assert.deepEqual(
      entriesFor(path, req({ path: '/a%2fb' })),
      [['path=/a%2fb']],
      'an escaped slash is not a separator',
    );
    const exact = rules(`domain: edge
http:
  path_matching: { ignore_case: false, ignore_trailing_slash: false, ignore_path_parameters: false }
  rate_limits:
    - actions:
        - path: {}
        - header_value_match: { descriptor_value: hit, headers: [{ name: ":path", exact_match: "/Login/?q=1" }] }
`);
    const keepParameters = rules(
      'domain: edge\nhttp:\n  path_matching: { ignore_path_parameters: false }\n  rate_limits:\n    - actions: [{ path: {} }]\n',
    );
    const [kept] = httpDescriptorsFor(keepParameters, req({ path: '/Login;x' }));
    assert.equal(kept?.descriptors[0]?.entries[0]?.value, '/login;x', 'path parameters kept when asked');
    const [edge] = httpDescriptorsFor(exact, req({ path: '//Login/?q=1' }));
    assert.deepEqual(
      edge?.descriptors.map((d) => d.entries.map((e) => `${e.key}=${e.value}`)),
      [['path=/Login/', 'header_match=hit']],
      'merged slashes still, but case and trailing slash kept; :path shows the normalised path with its query',
    );
  });

  it('rejects an unknown field of path_matching with its position', () => {
    const result = parseRules([
      { file: 'edge.yaml', text: 'domain: edge\nhttp:\n  path_matching: { ignore_cases: true }\n' },
    ]);
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.deepEqual(
      result.issues.map((i) => [i.code, i.line]),
      [[RULE_ISSUE_CODES.unknownField, 3]],
    );
  });

  it('validation of the http section reports every problem with its position', () => {
    const result = parseRules([
      {
        file: 'edge.yaml',
        text: `domain: edge
http:
  rate_limits:
    - actions:
        - request_headers: { header_name: x-key }
        - header_value_match: { descriptor_value: v, headers: [{ name: x, safe_regex_match: { regex: "(" } }] }
        - teleport: {}
    - hits_addend: 2
`,
      },
    ]);
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.deepEqual(
      result.issues.map((i) => [i.code, i.line]),
      [
        [RULE_ISSUE_CODES.missingField, 5],
        [RULE_ISSUE_CODES.invalidValue, 6],
        [RULE_ISSUE_CODES.unknownField, 7],
        [RULE_ISSUE_CODES.missingField, 8],
      ],
    );
  });
});
