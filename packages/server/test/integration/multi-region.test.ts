/**
 * `sluice serve --region`: two services, each in its own region with its own redis-server, sharing
 * one limit through the multi-region store (escrow by default: never over the limit), the dashboard
 * showing the regions, and flags that do not make sense refused with the fix.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { CLI, postJson, ROOT, type SluiceProcess, startSluice, unique } from './helpers.js';

describe('sluice serve in two regions', () => {
  let eu: RedisServerHandle;
  let us: RedisServerHandle;
  const services: SluiceProcess[] = [];
  before(async () => {
    [eu, us] = await Promise.all([startRedis(), startRedis()]);
  });
  after(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await Promise.all([eu?.stop(), us?.stop()]);
  });

  it('shares one limit between the regions and shows them on the dashboard', async () => {
    const common = ['--sync-interval', '100ms', '--redis-timeout', '2s', '--no-watch'];
    services.push(await startSluice(['--region', 'eu', '--redis', eu.url, '--region-peer', `us=${us.url}`, ...common]));
    services.push(await startSluice(['--region', 'us', '--redis', us.url, '--region-peer', `eu=${eu.url}`, ...common]));
    const key = unique('mr');
    let allowed = 0;
    for (const service of services) {
      for (let i = 0; i < 15; i++) {
        const r = await postJson(`http://127.0.0.1:${service.http}/v1/check`, {
          checks: [{ key, limit: 10, period: 60_000, algorithm: 'gcra' }],
        });
        assert.equal(r.status, 200, r.text);
        const [result] = r.json.results as { allowed: boolean }[];
        if (result?.allowed) allowed++;
      }
    }
    assert.ok(allowed > 0 && allowed <= 10, `admitted ${allowed} of a limit of 10 across both regions`);
    const res = await fetch(`http://127.0.0.1:${services[0]?.http}/api/dashboard`);
    const body = (await res.json()) as {
      service: { store: string; regions?: { region: string; mode: string; peers: { region: string }[] } };
    };
    assert.equal(body.service.store, 'multi-region');
    assert.equal(body.service.regions?.region, 'eu');
    assert.equal(body.service.regions?.mode, 'escrow');
    assert.deepEqual(
      body.service.regions?.peers.map((p) => p.region),
      ['us'],
    );
  });

  for (const [args, message] of [
    [['--region', 'eu'], "give this region's Redis with --redis"],
    [['--region', 'eu', '--redis', 'redis://127.0.0.1:1'], 'name the other regions with --region-peer'],
    [['--region-peer', 'us=redis://127.0.0.1:1'], 'need --region'],
    [['--region', 'eu', '--redis', 'redis://127.0.0.1:1', '--region-peer', 'us'], 'is not NAME=redis://host:port'],
    [
      [
        '--region',
        'eu',
        '--redis',
        'redis://127.0.0.1:1',
        '--region-peer',
        'us=redis://x:1',
        '--multi-region-mode',
        'strong',
      ],
      'escrow or eventual',
    ],
  ] as [string[], string][]) {
    it(`refuses ${args.join(' ')} (exit 2: ${message})`, () => {
      const run = spawnSync(process.execPath, [...CLI, 'serve', ...args], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(run.status, 2, run.stderr);
      assert.ok(run.stderr.includes(message), run.stderr);
    });
  }
});
