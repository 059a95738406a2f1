/**
 * The rules' own priority names (`http.adaptive.priorities`) on a running `sluice serve --adaptive`: the
 * dashboard's data and /metrics use them, a reload that names others reshapes the live limit (requests in
 * flight drain under the old one, counts carry over by name), and a reload naming an undeclared priority is
 * refused with its code and line, the limit unchanged.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { type AdaptiveGateway, startAdaptiveGateway, until } from './adaptive-gateway.js';

const TOKEN = 'custom-priorities-token-0123456789abcdef';
const rules = (http: string) => `domain: tiers
http:
${http}  rate_limits:
    - actions: [{ generic_key: { descriptor_value: everyone } }]
descriptors:
  - { key: generic_key, value: everyone, rate_limit: { unit: day, requests_per_unit: 1000000 } }
`;
const GOLD = rules(`  adaptive:
    priorities: { gold: 0.6, silver: 0.3, bronze: 0.1 }
  priorities:
    - { path_prefix: /pay, method: POST, priority: gold }
`);
const DEFAULT = rules('  priorities:\n    - { path_prefix: /pay, method: POST, priority: critical }\n');
// A route naming gold, which no file declares any more: line 4.
const UNDECLARED = rules('  priorities:\n    - { path_prefix: /pay, method: POST, priority: gold }\n');

interface View {
  inFlight: number;
  priorities: { name: string; admitted: number; inFlight: number }[];
}

describe('gateway --adaptive with the rules own priority names', { timeout: 60_000 }, () => {
  let gw: AdaptiveGateway;
  let arrived = 0;
  const http = () => `http://127.0.0.1:${gw.sluice.http}`;
  const view = async () => ((await (await fetch(`${http()}/api/dashboard`)).json()) as { adaptive: View }).adaptive;
  const metric = async (name: string, priority: string) => {
    const text = await (await fetch(`${http()}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`priority="${priority}"`));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  };
  const reload = async (text: string) => {
    writeFileSync(gw.config.path, text);
    const res = await fetch(`${http()}/admin/reload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return { status: res.status, body: (await res.json()) as { issues?: { code: string; line: number }[] } };
  };
  const answers: Promise<number>[] = [];
  /** Sends a request that the upstream holds; resolves once it arrived there (its status goes to `answers`). */
  const hold = async (method: string, path: string) => {
    const before = arrived;
    answers.push(fetch(`${gw.url}${path}`, { method }).then((res) => res.arrayBuffer().then(() => res.status)));
    await until(() => arrived > before, `${method} ${path} reaches the upstream`);
  };
  before(async () => {
    gw = await startAdaptiveGateway(GOLD, () => arrived++, { SLUICE_ADMIN_TOKEN: TOKEN });
  });
  after(() => gw?.stop());

  it('names the priorities as the rules do, and follows a reload that renames them', async () => {
    await hold('POST', '/pay');
    await hold('GET', '/other');
    let v = await view();
    assert.deepEqual(
      v.priorities.map((p) => [p.name, p.admitted]),
      [
        ['gold', 1],
        ['silver', 0],
        ['bronze', 1],
      ],
    );
    assert.equal(await metric('sluice_adaptive_admitted_total', 'gold'), 1);

    // Reloaded with the default names: the limit is rebuilt as critical/normal/batch; the two held requests
    // still count as in flight (draining under the old shape).
    assert.equal((await reload(DEFAULT)).status, 200);
    await hold('POST', '/pay');
    v = await view();
    assert.deepEqual(
      v.priorities.map((p) => p.name),
      ['critical', 'normal', 'batch'],
    );
    assert.equal(v.priorities[0]?.admitted, 1);
    assert.equal(v.inFlight, 3);
    assert.equal(await metric('sluice_adaptive_admitted_total', 'critical'), 1);
    assert.equal(await metric('sluice_adaptive_admitted_total', 'gold'), 1, 'a counter never goes down');

    // A route naming a priority no file declares: refused with its code and line, nothing changes.
    const refused = await reload(UNDECLARED);
    assert.equal(refused.status, 422);
    assert.deepEqual(
      refused.body.issues?.map((i) => [i.code, i.line]),
      [['ERR_SLUICE_RULES_INVALID_VALUE', 4]],
    );
    assert.deepEqual(
      (await view()).priorities.map((p) => p.name),
      ['critical', 'normal', 'batch'],
    );

    for (const res of gw.held.splice(0)) res.end('ok');
    assert.deepEqual(await Promise.all(answers), [200, 200, 200]);
    await until(async () => (await view()).inFlight === 0, 'every place came back');
  });
});
