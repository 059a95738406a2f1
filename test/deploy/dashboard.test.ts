// deploy/grafana/sluice-dashboard.json: every metric a panel or variable queries is one a real service on
// Redis exposes on /metrics once it has decided (allowed and limited) and been asked over gRPC and HTTP.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createRlsClient } from 'sluice-server';
import { startSluice } from './start-sluice.js';

const DASHBOARD = join(import.meta.dirname, '..', '..', 'deploy/grafana/sluice-dashboard.json');
const RULES = 'domain: dash\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n';

/** Every `sluice_*` name in the dashboard's queries, with a histogram's suffix kept. */
function queriedMetrics(): string[] {
  const text = readFileSync(DASHBOARD, 'utf8');
  const board = JSON.parse(text) as { panels: { targets: { expr: string }[] }[] };
  assert.ok(board.panels.length >= 6, 'the dashboard has panels');
  return [...new Set(text.match(/sluice_[a-z_]+/g) ?? [])].sort();
}

test('every metric the Grafana dashboard queries exists on a real service', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'dashboard-'));
  writeFileSync(join(dir, 'rules.yaml'), RULES);
  const service = await startSluice(['serve', '--config', join(dir, 'rules.yaml')], {
    REDIS_URL: 'redis://127.0.0.1:6379',
  });
  const client = createRlsClient(`127.0.0.1:${service.grpc}`);
  try {
    const user = `dash-${process.pid}-${Date.now()}`;
    for (let i = 0; i < 3; i++)
      await client.shouldRateLimit({ domain: 'dash', descriptors: [{ entries: [{ key: 'user', value: user }] }] });
    await fetch(`http://127.0.0.1:${service.http}/healthcheck`);
    const scrape = await (await fetch(`http://127.0.0.1:${service.http}/metrics`)).text();
    const exposed = new Set(
      scrape
        .split('\n')
        .filter((l) => l.startsWith('sluice_'))
        .map((l) => l.split(/[{ ]/)[0]),
    );
    const missing = queriedMetrics().filter((m) => !exposed.has(m));
    assert.deepEqual(missing, [], `not on /metrics: ${missing.join(', ')}`);
    assert.match(scrape, /sluice_decisions_total\{[^}]*outcome="over_limit"[^}]*\} 2/);
  } finally {
    client.close();
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
