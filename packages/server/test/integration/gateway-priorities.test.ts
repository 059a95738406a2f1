/**
 * `sluice serve --upstream … --adaptive` with the rules' `http.priorities`: under overload a critical route's
 * requests are admitted while batch ones are shed (counted at an upstream that holds every request).
 */
import assert from 'node:assert/strict';
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type SluiceProcess, startSluice, tempFile } from './helpers.js';

const RULES = `domain: overload
http:
  priorities:
    - { path_prefix: /pay, method: POST, priority: critical }
    - { path_prefix: /report, priority: batch }
  rate_limits:
    - actions: [{ generic_key: { descriptor_value: everyone } }]
descriptors:
  - { key: generic_key, value: everyone, rate_limit: { unit: day, requests_per_unit: 1000000 } }
`;

/** A POST sent with its target exactly as written (fetch would resolve the dot segments itself); its status. */
function rawPost(url: string, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url + target, { method: 'POST', path: target }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Waits (a few ms between looks) until `done()`; fails after 10 s. */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; !done(); i++) {
    if (i > 1000) assert.fail(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('gateway --adaptive with http.priorities', { timeout: 60_000 }, () => {
  const held: ServerResponse[] = [];
  const arrived: Record<string, number> = {};
  const upstream = createServer((req, res) => {
    req.resume();
    const path = (req.url ?? '/').split('?')[0] as string;
    arrived[path] = (arrived[path] ?? 0) + 1;
    held.push(res);
  });
  let sluice: SluiceProcess;
  let config: ReturnType<typeof tempFile>;
  let gateway: string;
  before(async () => {
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    config = tempFile('priorities.yaml', RULES);
    const port = (upstream.address() as AddressInfo).port;
    sluice = await startSluice([
      '--config',
      config.path,
      '--upstream',
      `http://127.0.0.1:${port}`,
      '--gateway-max-client-inflight',
      '1000',
      '--adaptive',
      'aimd',
    ]);
    gateway = `http://127.0.0.1:${sluice.proxy}`;
  });
  after(async () => {
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
    await sluice?.stop();
    config?.remove();
  });

  it('a critical route is admitted while batch requests are shed with 503', async () => {
    const statuses: Record<string, number[]> = { '/pay': [], '/report': [] };
    const send = (path: string, method: string) =>
      fetch(`${gateway}${path}`, { method }).then(async (res) => {
        await res.arrayBuffer();
        statuses[path]?.push(res.status);
      });
    const sent: Promise<void>[] = [send('/pay', 'POST')];
    await until(() => arrived['/pay'] === 1, 'the first critical request reaches the upstream');
    // 30 batch requests against a limit of 20 that critical has a claim on: batch takes what is left, the rest shed.
    for (let i = 0; i < 30; i++) sent.push(send('/report', 'GET'));
    await until(() => (arrived['/report'] ?? 0) + (statuses['/report'] as number[]).length === 30, 'batch settled');
    const batchShed = (statuses['/report'] as number[]).filter((s) => s === 503).length;
    assert.equal(batchShed, (statuses['/report'] as number[]).length, 'only 503s answered while the upstream holds');
    assert.ok(batchShed >= 15, `${batchShed} batch requests shed`);
    // A path that only spells its way under /pay is not on it: the upstream would get /report, so it is batch
    // (shed, batch being full) — taken for critical, it would have reached the upstream with room to spare.
    const reportsBefore = arrived['/report'] ?? 0;
    let dotStatus: number | undefined;
    const dot = rawPost(gateway, '/pay/../report').then((status) => {
      dotStatus = status;
    });
    await until(() => dotStatus !== undefined || (arrived['/report'] ?? 0) > reportsBefore, 'the dot-segment request');
    assert.equal(arrived['/report'] ?? 0, reportsBefore, 'the dot-segment request reached the upstream as critical');
    await dot;
    assert.equal(dotStatus, 503);
    // The critical route's share is kept for it: 9 more all reach the upstream, none is shed.
    for (let i = 0; i < 9; i++) sent.push(send('/pay', 'POST'));
    await until(() => arrived['/pay'] === 10 || (statuses['/pay'] as number[]).length > 0, 'critical settled');
    assert.equal(arrived['/pay'], 10);
    assert.deepEqual(statuses['/pay'], []);
    // A GET on /pay is not the critical route (POST only): it is batch, and batch is full.
    const get = await fetch(`${gateway}/pay`);
    await get.arrayBuffer();
    assert.equal(get.status, 503);
    // A path that only spells its way under /pay is not on it: the upstream would get /report (batch, full).
    for (const res of held.splice(0)) res.end('ok');
    await Promise.all(sent);
    assert.ok((statuses['/pay'] as number[]).every((s) => s === 200));
  });
});
