/**
 * A flood of requests on no route (batch) against `sluice serve --upstream … --adaptive aimd` in front of an
 * upstream that holds every request: the flood takes the idle limit first, and critical requests arriving after
 * it still reach the upstream (their guaranteed places, over the limit), while the flood's next requests are shed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type AdaptiveGateway, startAdaptiveGateway, until } from '../integration/adaptive-gateway.js';

const RULES = `domain: flood
http:
  priorities:
    - { path_prefix: /pay, method: POST, priority: critical }
  rate_limits:
    - actions: [{ generic_key: { descriptor_value: everyone } }]
descriptors:
  - { key: generic_key, value: everyone, rate_limit: { unit: day, requests_per_unit: 1000000 } }
`;

interface AdaptiveView {
  limit: number;
  inFlight: number;
  priorities: { name: string; guaranteed: number; inFlight: number; admitted: number; shed: number }[];
}

describe('gateway --adaptive under a flood of requests on no route', { timeout: 90_000 }, () => {
  const arrived = { batch: 0, critical: 0 };
  let gw: AdaptiveGateway;
  let gateway: string;
  const adaptive = async (): Promise<AdaptiveView> => {
    const res = await fetch(`http://127.0.0.1:${gw.sluice.http}/api/dashboard`);
    return ((await res.json()) as { adaptive: AdaptiveView }).adaptive;
  };
  before(async () => {
    // Only the critical route is a POST: the upstream gets normalised paths (a flood's /%2e%2e/pay is /pay).
    gw = await startAdaptiveGateway(RULES, (req) => {
      if (req.method === 'POST') arrived.critical++;
      else arrived.batch++;
    });
    gateway = gw.url;
  });
  after(() => gw?.stop());

  it('critical requests after the flood still reach the upstream; the flood is shed', async () => {
    const statuses = { batch: [] as number[], critical: [] as number[] };
    const send = (kind: 'batch' | 'critical', path: string, method = 'GET') =>
      fetch(`${gateway}${path}`, { method }).then(async (res) => {
        await res.arrayBuffer();
        statuses[kind].push(res.status);
      });
    const sent: Promise<void>[] = [];
    // 150 requests on paths no route names, odd ones included, all at once: batch, held by the upstream.
    const paths = ['/', '/x', '/pay', '/PAYX', '/pay/../report', '/%2e%2e/pay', `/${'a'.repeat(2000)}`];
    for (let i = 0; i < 150; i++) sent.push(send('batch', `${paths[i % paths.length]}?i=${i}`));
    await until(
      () => arrived.batch + statuses.batch.length === 150,
      () => `the flood settled: ${arrived.batch} arrived, ${statuses.batch}`,
    );
    const before = await adaptive();
    assert.equal(arrived.batch, before.limit, 'the flood took the whole idle limit');
    assert.ok(statuses.batch.every((s) => s === 503));
    // Critical requests now: each of its guaranteed places reaches the upstream although batch holds the limit.
    const guaranteed = before.priorities.find((p) => p.name === 'critical')?.guaranteed ?? 0;
    assert.ok(guaranteed >= 1, `critical is guaranteed ${guaranteed} places`);
    for (let i = 0; i < guaranteed; i++) sent.push(send('critical', '/pay', 'POST'));
    await until(() => arrived.critical + statuses.critical.length === guaranteed, 'critical settled');
    assert.equal(
      arrived.critical,
      guaranteed,
      `critical answered ${statuses.critical} instead of reaching the upstream`,
    );
    // More of the flood: shed, every one (critical wants its share); one more critical past its guarantee: shed.
    const batchBefore = statuses.batch.length;
    for (let i = 0; i < 50; i++) sent.push(send('batch', `/more/${i}`));
    sent.push(send('critical', '/pay', 'POST'));
    await until(
      () => statuses.batch.length === batchBefore + 50 && statuses.critical.length === 1,
      'the second wave settled',
    );
    assert.equal(arrived.batch, before.limit, 'no more batch reached the upstream');
    assert.deepEqual(statuses.critical, [503]);
    const view = await adaptive();
    const critical = view.priorities.find((p) => p.name === 'critical');
    const batch = view.priorities.find((p) => p.name === 'batch');
    assert.deepEqual([critical?.admitted, critical?.shed, critical?.inFlight], [guaranteed, 1, guaranteed]);
    assert.equal(batch?.shed, 200 - before.limit);
    assert.equal(view.inFlight, before.limit + guaranteed);
    // Everything held is answered; every place comes back.
    for (const res of gw.held.splice(0)) res.end('ok');
    await Promise.all(sent);
    await until(async () => (await adaptive()).inFlight === 0, 'every place came back');
  });
});
