/**
 * `POST /admin/explain` end to end: it answers what the next `/json`, `/v1/check` or gateway decision is without
 * counting, says which rule matched and why (nested, wildcard, replaces, unlimited, shadow, the lists), needs the admin
 * token, and refuses malformed and oversized bodies with codes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { explainCommand } from '../../src/cli/commands/explain.js';
import { postJson, type SluiceProcess, startSluice, tempFile, unique } from './helpers.js';

const TOKEN = 'it-explain-token-0123456789abcdef';
const RULES = `domain: ex
http:
  rate_limits:
    - actions:
        - generic_key: { descriptor_value: api }
        - request_headers: { header_name: x-api-key, descriptor_key: api_key }
descriptors:
  - key: generic_key
    value: api
    descriptors:
      - key: api_key
        rate_limits:
          - { name: per-minute, unit: minute, requests_per_unit: 3 }
          - { name: per-day, unit: day, requests_per_unit: 100 }
  - key: path
    value: /files/*
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: path
    value: /health
    rate_limit: { unlimited: true }
  - key: user
    rate_limit: { name: per-user, unit: day, requests_per_unit: 2 }
  - key: vip
    rate_limit: { unit: minute, requests_per_unit: 50, replaces: [{ name: per-user }] }
  - key: trial
    shadow_mode: true
    rate_limit: { unit: day, requests_per_unit: 1 }
`;

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of JSON answers
type Json = Record<string, any>;

describe('POST /admin/explain', () => {
  let sluice: SluiceProcess;
  let base: string;
  let config: ReturnType<typeof tempFile>;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const explain = async (body: unknown, headers: Record<string, string> = auth) => {
    const res = await fetch(`${base}/admin/explain`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const request = (...descriptors: [string, string][][]) => ({
    domain: 'ex',
    descriptors: descriptors.map((d) => ({ entries: d.map(([key, value]) => ({ key, value })) })),
  });

  before(async () => {
    config = tempFile('rules.yaml', RULES);
    sluice = await startSluice(['--config', config.path, '--max-body', '65536'], { SLUICE_ADMIN_TOKEN: TOKEN });
    base = `http://127.0.0.1:${sluice.http}`;
  });
  after(async () => {
    assert.equal((await sluice?.stop())?.code, 0);
    config?.remove();
  });

  it('needs the admin token: no key is shown without it', async () => {
    const none = await explain(request([['user', 'secret-user']]), {});
    assert.equal(none.status, 401);
    assert.doesNotMatch(JSON.stringify(none.body), /secret-user/);
    const wrong = await explain(request([['user', 'secret-user']]), { authorization: 'Bearer nope' });
    assert.equal(wrong.status, 403);
    assert.doesNotMatch(JSON.stringify(wrong.body), /secret-user/);
  });

  it('agrees with the next /json decision and counts nothing', async () => {
    const user = unique('u');
    const req = request([['user', user]], [['trial', user]], [['path', '/health']]);
    for (let round = 0; round < 4; round++) {
      const first = await explain(req);
      const again = await explain(req);
      assert.equal(first.status, 200);
      const counters = (b: Json) =>
        b.domains[0].descriptors.map((d: Json) => [d.status?.limitRemaining, d.limits?.map((l: Json) => l.remaining)]);
      assert.deepEqual(counters(again.body), counters(first.body), 'explaining counted');
      const decided = await postJson(`${base}/json`, req);
      const code = decided.status === 200 ? 'OK' : 'OVER_LIMIT';
      assert.equal(first.body.overallCode, code, `round ${round}`);
      const [user0, trial, health] = first.body.domains[0].descriptors;
      assert.equal(user0.rule.descriptor, 'user');
      assert.equal(user0.limits[0].name, 'per-user');
      assert.equal(trial.shadow, true);
      assert.equal(health.outcome, 'unlimited');
      assert.equal(health.steps[0].matchedBy, 'exact');
    }
  });

  it('names replaces, wildcards, nested rules and the binding limit', async () => {
    const body = (await explain(request([['user', 'r1']], [['vip', 'y']], [['path', '/files/a.txt']]))).body;
    const [user, vip, files] = body.domains[0].descriptors;
    assert.equal(user.outcome, 'replaced');
    assert.deepEqual(user.replaced, ['per-user']);
    assert.equal(vip.outcome, 'limited');
    assert.equal(files.steps[0].matchedBy, 'wildcard');
    assert.equal(files.steps[0].rule, 'path=/files/*');
    const http = (await explain({ http: { method: 'GET', path: '/x', headers: { 'X-Api-Key': 'k1' } } })).body;
    const nested = http.domains[0].descriptors[0];
    assert.deepEqual(
      nested.steps.map((s: Json) => s.matchedBy),
      ['exact', 'key'],
    );
    assert.deepEqual(
      nested.limits.map((l: Json) => [l.name, l.binding]),
      [
        ['per-minute', true],
        ['per-day', false],
      ],
    );
    const missing = (
      await explain(
        request([
          ['user', 'x'],
          ['deeper', 'y'],
        ]),
      )
    ).body;
    assert.equal(missing.domains[0].descriptors[0].outcome, 'no-rule');
    assert.match(missing.domains[0].descriptors[0].why, /no nested descriptors/);
  });

  it('says when a deny or allow list decided', async () => {
    const leaked = unique('leaked');
    const added = await fetch(`${base}/admin/lists/deny`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ key: 'user', value: leaked }),
    });
    assert.equal(added.status, 201);
    const body = (await explain(request([['user', leaked]]))).body;
    assert.equal(body.overallCode, 'OVER_LIMIT');
    assert.equal(body.verdict, 'deny-list');
    assert.equal(body.domains[0].descriptors[0].outcome, 'deny-list');
  });

  it('explains /v1/check items without counting them', async () => {
    const key = unique('k');
    const item = { key, limit: 1, period: '1m' };
    const before = (await explain({ checks: [item] })).body;
    assert.equal(before.checks[0].verdict, 'within-limit');
    assert.equal(before.checks[0].remaining, 1);
    const checked = (await postJson(`${base}/v1/check`, { checks: [item] })).json as Json;
    assert.equal(checked.results[0].allowed, true);
    const afterwards = (await explain({ checks: [item] })).body;
    assert.equal(afterwards.checks[0].verdict, 'over-limit');
    assert.equal(afterwards.overallCode, 'OVER_LIMIT');
  });

  it('refuses malformed, hostile and oversized bodies with codes', async () => {
    const cases: [unknown, number, string][] = [
      ['[1,2]', 400, 'ERR_SLUICE_EXPLAIN_INVALID'],
      [{ domain: 'ex', descriptors: [], checks: [] }, 400, 'ERR_SLUICE_EXPLAIN_INVALID'],
      [{ domain: 'ex', descriptors: [] }, 400, 'ERR_SLUICE_REQUEST_EMPTY_DESCRIPTORS'],
      [{ http: { method: 'G ET', path: '/' } }, 400, 'ERR_SLUICE_EXPLAIN_INVALID'],
      [{ http: { method: 'GET', path: 'http://x/' } }, 400, 'ERR_SLUICE_EXPLAIN_INVALID'],
      [{ http: { method: 'GET', path: `/${'a'.repeat(9000)}` } }, 400, 'ERR_SLUICE_EXPLAIN_INVALID'],
      [
        {
          http: {
            method: 'GET',
            path: '/',
            headers: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`h${i}`, 'v'])),
          },
        },
        400,
        'ERR_SLUICE_TOO_MANY_ITEMS',
      ],
      [{ checks: Array.from({ length: 1001 }, () => ({})) }, 400, 'ERR_SLUICE_TOO_MANY_ITEMS'],
      [{ domain: 'ex', descriptors: Array.from({ length: 1001 }, () => ({})) }, 400, 'ERR_SLUICE_TOO_MANY_ITEMS'],
    ];
    for (const [body, status, code] of cases) {
      const answer = await explain(body);
      assert.equal(answer.status, status, JSON.stringify(answer.body));
      assert.equal(answer.body.error.code, code);
    }
    const huge = await explain({
      domain: 'ex',
      descriptors: [{ entries: [{ key: 'user', value: 'x'.repeat(70_000) }] }],
    });
    assert.equal(huge.status, 413);
  });

  it('sluice explain prints the walk and the counters, and exits 1 when the request would be refused', async () => {
    const run = async (...args: string[]) => {
      let out = '';
      let err = '';
      const code = await explainCommand.run([...args, '--url', base, '--token', TOKEN], {
        out: (t) => {
          out += t;
        },
        err: (t) => {
          err += t;
        },
      });
      return { code, out, err };
    };
    const user = unique('cli');
    const first = await run('--domain', 'ex', '--descriptor', `user=${user}`, '--hits', '2');
    assert.equal(first.code, 0, first.err);
    assert.match(first.out, /^OK — decided by: within-limits/);
    assert.match(first.out, /per-user: 2 per 24 h \(fixed-window\): 2 left, unused, passes/);
    assert.match(first.out, new RegExp(`walk: user=${user} → user \\(key\\)`));
    const over = await run('--domain', 'ex', '--descriptor', `user=${user}`, '--hits', '3', '--output', 'json');
    assert.equal(over.code, 1);
    assert.equal(JSON.parse(over.out).overallCode, 'OVER_LIMIT');
    const http = await run('--http', 'GET /x', '--header', 'x-api-key: k9');
    assert.equal(http.code, 0, http.err);
    assert.match(http.out, /walk: generic_key=api → generic_key=api \(exact\) \/ api_key=k9 → api_key \(key\)/);
    const bad = await run('--domain', 'ex');
    assert.equal(bad.code, 2);
    assert.match(bad.err, /at least one --descriptor/);
    const refused = await explainCommand.run(
      ['--domain', 'ex', '--descriptor', 'a=b', '--url', base, '--token', 'wrong-token-0123456789abcdef'],
      {
        out: () => {},
        err: () => {},
      },
    );
    assert.equal(refused, 2);
  });

  it('sluice explain reports an invalid /v1/check item with its code and exits 2, not 0', async () => {
    let err = '';
    const io = {
      out: () => {},
      err: (t: string) => {
        err += t;
      },
    };
    const items = [
      { key: unique('ok'), limit: 5, period: '1m' },
      { key: '', limit: -1, period: 'forever' },
    ];
    const code = await explainCommand.run(
      ['--json', JSON.stringify({ checks: items }), '--url', base, '--token', TOKEN],
      io,
    );
    assert.equal(code, 2);
    assert.match(err, /^sluice explain: checks\[1\] is invalid: ERR_SLUICE_\w+ /m);
    assert.doesNotMatch(err, /checks\[0\]/);
  });

  it('POST /json answers a 429 as problem details naming the violated policy when Accept asks for it', async () => {
    const req = request([['user', unique('p')]]);
    for (let i = 0; i < 2; i++) assert.equal((await postJson(`${base}/json`, req)).status, 200);
    const plain = await postJson(`${base}/json`, req);
    assert.equal(plain.status, 429);
    assert.match(plain.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(plain.json.overallCode, 'OVER_LIMIT');
    const problem = await postJson(`${base}/json`, req, { accept: 'application/problem+json, application/json;q=0.5' });
    assert.equal(problem.status, 429);
    assert.equal(problem.headers.get('content-type'), 'application/problem+json');
    assert.ok(problem.headers.get('retry-after'));
    const body = problem.json as Json;
    assert.equal(body.status, 429);
    assert.equal(body.code, 'RATE_LIMIT_EXCEEDED');
    assert.deepEqual(body['violated-policies'], ['per-user']);
    assert.equal(body.policies[0].limit, 2);
    const refused = await postJson(`${base}/json`, req, { accept: 'application/problem+json;q=0' });
    assert.match(refused.headers.get('content-type') ?? '', /^application\/json/);
  });
});
