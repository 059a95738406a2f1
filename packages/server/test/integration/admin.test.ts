/**
 * The admin API end to end: bearer-token access, allow/deny entries that take effect on the very next
 * request (gRPC, /json and /v1/check), inspect and reset of a key, config reload on demand and on a file
 * change.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { createRlsClient, type RlsClient } from '../../src/index.js';
import { postJson, type SluiceProcess, startSluice, tempFile, unique } from './helpers.js';

const TOKEN = 'it-admin-token-0123456789abcdef';
const RULES = `domain: adm
descriptors:
  - key: api_key
    rate_limit: { unit: day, requests_per_unit: 5 }
`;

describe('admin API', () => {
  let sluice: SluiceProcess;
  let base: string;
  let client: RlsClient;
  let config: ReturnType<typeof tempFile>;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const admin = (method: string, path: string, body?: unknown, headers: Record<string, string> = auth) =>
    fetch(`${base}/admin${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const ask = (key: string) =>
    client.shouldRateLimit({ domain: 'adm', descriptors: [{ entries: [{ key: 'api_key', value: key }] }] });

  before(async () => {
    config = tempFile('rules.yaml', RULES);
    sluice = await startSluice(['--config', config.path], { SLUICE_ADMIN_TOKEN: TOKEN });
    base = `http://127.0.0.1:${sluice.http}`;
    client = createRlsClient(`127.0.0.1:${sluice.grpc}`);
  });
  after(async () => {
    client?.close();
    assert.equal((await sluice?.stop())?.code, 0);
    config?.remove();
  });

  it('401 without a token, 403 with a wrong one, 200 with the right one', async () => {
    const none = await admin('GET', '/lists', undefined, {});
    assert.equal(none.status, 401);
    assert.equal((await none.json()).error.code, 'ERR_SLUICE_UNAUTHORIZED');
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/);
    const basic = await admin('GET', '/lists', undefined, {
      authorization: `Basic ${Buffer.from('a:b').toString('base64')}`,
    });
    assert.equal(basic.status, 401);
    const wrong = await admin('GET', '/lists', undefined, { authorization: 'Bearer not-the-token' });
    assert.equal(wrong.status, 403);
    assert.equal((await wrong.json()).error.code, 'ERR_SLUICE_FORBIDDEN');
    const longer = await admin('GET', '/lists', undefined, { authorization: `Bearer ${TOKEN}x` });
    assert.equal(longer.status, 403);
    const right = await admin('GET', '/lists');
    assert.equal(right.status, 200);
    assert.deepEqual(await right.json(), { allow: [], deny: [] });
  });

  it('a deny entry takes effect on the next request, on every API, until removed', async () => {
    const leaked = unique('leaked');
    assert.equal((await ask(leaked)).overallCode, 'OK');
    const added = await admin('POST', '/lists/deny', { key: 'api_key', value: leaked, note: 'leaked on a forum' });
    assert.equal(added.status, 201);
    const entry = (await added.json()) as { id: string; value: string; list: string };
    assert.equal(entry.value, leaked);
    assert.equal(entry.list, 'deny');

    const denied = await ask(leaked);
    assert.equal(denied.overallCode, 'OVER_LIMIT');
    assert.equal(denied.statuses?.[0]?.code, 'OVER_LIMIT');
    const viaJson = await postJson(`${base}/json`, {
      domain: 'adm',
      descriptors: [{ entries: [{ key: 'api_key', value: leaked }] }],
    });
    assert.equal(viaJson.status, 429);
    assert.equal((await ask(unique('other'))).overallCode, 'OK', 'other keys pass');

    const listed = (await (await admin('GET', '/lists/deny')).json()) as { deny: { id: string }[] };
    assert.deepEqual(
      listed.deny.map((e) => e.id),
      [entry.id],
    );
    assert.equal((await admin('DELETE', `/lists/deny/${entry.id}`)).status, 200);
    assert.equal((await admin('DELETE', `/lists/deny/${entry.id}`)).status, 404);
    assert.equal((await ask(leaked)).overallCode, 'OK');
  });

  it('a deny entry without a key matches any descriptor value and /v1/check keys; CIDRs match addresses', async () => {
    const bad = unique('bad');
    const e1 = (await (await admin('POST', '/lists/deny', { value: bad })).json()) as { id: string };
    const check = await postJson(`${base}/v1/check`, {
      checks: [
        { key: bad, limit: 10, period: '1m' },
        { key: unique('ok'), limit: 10, period: '1m' },
      ],
    });
    const results = check.json.results as { allowed: boolean; reason?: string }[];
    assert.deepEqual(
      results.map((r) => [r.allowed, r.reason]),
      [
        [false, 'denied'],
        [true, undefined],
      ],
    );
    const e2 = (await (await admin('POST', '/lists/deny', { key: 'api_key', value: '10.9.0.0/16' })).json()) as {
      id: string;
    };
    assert.equal((await ask('10.9.3.4')).overallCode, 'OVER_LIMIT');
    assert.equal((await ask('10.8.3.4')).overallCode, 'OK');
    await admin('DELETE', `/lists/deny/${e1.id}`);
    await admin('DELETE', `/lists/deny/${e2.id}`);
  });

  it('an allow entry answers OK without counting', async () => {
    const vip = unique('vip');
    const entry = (await (await admin('POST', '/lists/allow', { key: 'api_key', value: vip })).json()) as {
      id: string;
    };
    for (let i = 0; i < 7; i++) assert.equal((await ask(vip)).overallCode, 'OK', `request ${i} of a 5/day key`);
    await admin('DELETE', `/lists/allow/${entry.id}`);
    const counted = await ask(vip);
    assert.equal(counted.statuses?.[0]?.limitRemaining, 4, 'the allowed requests were not counted');
  });

  it('refuses bad list entries with 400', async () => {
    for (const body of [{}, { value: '' }, { value: 5 }, { value: 'x', colour: 'red' }, { value: '10.0.0.0/99' }]) {
      const res = await admin('POST', '/lists/deny', body);
      assert.equal(res.status, 400, JSON.stringify(body));
    }
    assert.equal((await admin('POST', '/lists/maybe', { value: 'x' })).status, 404);
    assert.equal((await admin('PUT', '/lists/deny', { value: 'x' })).status, 405);
  });

  it('inspects and resets a key without counting', async () => {
    const key = unique('ir');
    for (let i = 0; i < 3; i++) await ask(key);
    const descriptor = { domain: 'adm', descriptors: [{ entries: [{ key: 'api_key', value: key }] }] };
    const seen = (await (await admin('POST', '/keys/inspect', descriptor)).json()) as {
      statuses: { limitRemaining: number }[];
    };
    assert.equal(seen.statuses[0]?.limitRemaining, 2);
    const again = (await (await admin('POST', '/keys/inspect', descriptor)).json()) as {
      statuses: { limitRemaining: number }[];
    };
    assert.equal(again.statuses[0]?.limitRemaining, 2, 'inspecting takes nothing');
    assert.equal((await admin('POST', '/keys/reset', descriptor)).status, 200);
    assert.equal((await ask(key)).statuses?.[0]?.limitRemaining, 4);

    const item = { key: unique('v1'), limit: 2, period: '1h' };
    await postJson(`${base}/v1/check`, { checks: [item, item] });
    const v1 = (await (await admin('POST', '/keys/inspect', item)).json()) as { remaining: number };
    assert.equal(v1.remaining, 0);
    await admin('POST', '/keys/reset', item);
    assert.equal(((await (await admin('POST', '/keys/inspect', item)).json()) as { remaining: number }).remaining, 2);
  });

  it('reloads on demand, keeps the last good rules when the new ones are broken, and on file change', async () => {
    writeFileSync(config.path, RULES.replace('requests_per_unit: 5', 'requests_per_unit: 50'));
    const ok = await admin('POST', '/reload');
    assert.equal(ok.status, 200);
    assert.deepEqual(((await ok.json()) as { domains: string[] }).domains, ['adm']);
    assert.equal((await ask(unique('r'))).statuses?.[0]?.currentLimit?.requestsPerUnit, 50);

    writeFileSync(
      config.path,
      'domain: adm\ndescriptors:\n  - key: api_key\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n',
    );
    const bad = await admin('POST', '/reload');
    assert.equal(bad.status, 422);
    const issues = ((await bad.json()) as { issues: { code: string; line: number }[] }).issues;
    assert.equal(issues[0]?.code, 'ERR_SLUICE_RULES_UNKNOWN_UNIT');
    assert.equal(issues[0]?.line, 4);
    assert.equal((await ask(unique('r'))).statuses?.[0]?.currentLimit?.requestsPerUnit, 50, 'the last good rules stay');

    // The watcher picks up a good file by itself.
    const loaded = sluice.stdout.length;
    writeFileSync(config.path, RULES.replace('requests_per_unit: 5', 'requests_per_unit: 7'));
    await sluice.waitForLog((r) => r.msg === 'config loaded' && sluice.stdout.length > loaded, 10_000);
    let limit: number | undefined;
    for (let i = 0; i < 50 && limit !== 7; i++) {
      limit = (await ask(unique('w'))).statuses?.[0]?.currentLimit?.requestsPerUnit;
      if (limit !== 7) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(limit, 7);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /^sluice_config_reloads_total\{result="failed"\} [1-9]/m);
    assert.match(metrics, /^sluice_config_reloads_total\{result="ok"\} [2-9]/m);
  });
});
