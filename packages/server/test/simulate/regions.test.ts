/**
 * `sluice simulate --regions`: the real multi-region store on virtual time. Escrow never admits
 * over the limit in a window and eventual stays within the bound it states, a run is repeatable
 * (virtual time: the same trace gives the same numbers), the baseline is there, and the command
 * refuses what it cannot run with a message that says why.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { simulateCommand } from '../../src/cli/commands/simulate.js';
import { generateTrace, simulateRegions } from '../../src/tools/simulate/index.js';
import type { RawRedis } from '../../src/tools/simulate/regions.js';

async function runSimulate(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await simulateCommand.run(argv, {
    out: (text) => {
      out += `${text}\n`;
    },
    err: (text) => {
      err += `${text}\n`;
    },
  });
  return { code, out, err };
}

// Generous: the charts check simulates five two-minute runs, and a loaded CI machine runs it several times slower.
describe('sluice simulate --regions', { timeout: 600_000 }, () => {
  let server: RedisServerHandle;
  let clients: Redis[] = [];
  before(async () => {
    server = await startRedis();
    clients = [0, 1, 2].map((db) => new Redis(server.port, '127.0.0.1', { db }));
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await server.stop();
  });

  const run = (split: 'even' | 'moving') =>
    simulateRegions({
      trace: generateTrace('steady', { limit: 10, periodMs: 1000, durationMs: 9000, load: 2 }),
      policy: { algorithm: 'fixed-window', limit: 10, period: 1000 },
      regions: ['eu', 'us', 'ap'],
      split,
      latencyMs: 50,
      syncIntervalMs: 200,
      modes: ['eventual', 'escrow', 'write-to-all'],
      redis: (i) => clients[i] as Redis,
    });

  it('the same numbers whatever order the real Redis answers arrive in', async () => {
    // Every region's Redis answers after a random real-time delay: the virtual schedule, not the
    // machine's load, must decide what happens at each instant (two pushes reaching one region at the
    // same virtual instant take its spare units in the same order every run).
    let seed = 7;
    const random = () => {
      seed = (seed * 48_271) % 2_147_483_647;
      return seed / 2_147_483_647;
    };
    const jittery = (c: Redis) => ({
      call: async (command: string, ...args: (string | number)[]) => {
        const reply = await c.call(command, ...args);
        await new Promise((r) => setTimeout(r, Math.floor(random() * 10)));
        return reply;
      },
    });
    const skewed = (redis: (i: number) => RawRedis) =>
      simulateRegions({
        trace: generateTrace('poisson', { limit: 20, periodMs: 1000, durationMs: 6000, load: 1.5, seed: 3 }),
        policy: { algorithm: 'fixed-window', limit: 20, period: 1000 },
        regions: ['eu', 'us', 'ap'],
        split: 'skewed',
        latencyMs: 50,
        syncIntervalMs: 100,
        modes: ['escrow'],
        redis,
      });
    const calm = await skewed((i) => clients[i] as Redis);
    const shaken = await skewed((i) => jittery(clients[i] as Redis));
    assert.deepEqual(
      shaken.runs.map((r) => r.perWindow),
      calm.runs.map((r) => r.perWindow),
    );
  });

  for (const split of ['even', 'moving'] as const) {
    it(`${split} load: escrow never over, eventual within its stated bound, repeatable`, async () => {
      const first = await run(split);
      const again = await run(split);
      assert.deepEqual(
        first.runs.map((r) => r.mode),
        ['eventual', 'escrow', 'write-to-all'],
      );
      for (const r of first.runs) assert.ok(r.admitted > 0, `${r.mode} admitted something`);
      const [eventual, escrow] = first.runs;
      assert.ok(escrow && eventual);
      assert.ok(escrow.maxPerWindow <= 10, `escrow: ${escrow.perWindow}`);
      assert.ok(eventual.statedBound !== undefined && eventual.maxPerWindow <= eventual.statedBound);
      assert.deepEqual(
        again.runs.map((r) => r.perWindow),
        first.runs.map((r) => r.perWindow),
        'virtual time: the same numbers every run',
      );
    });
  }

  it('the command prints the accuracy table and writes the chart; refuses eventual for a bucket', async () => {
    const url = `redis://127.0.0.1:${server.port}`;
    const { code, out, err } = await runSimulate(
      ...['--regions', '3', '--split', 'skewed', '--trace', 'steady', '--load', '2', '--duration', '6s'],
      ...['--algorithms', 'token-bucket', '--redis', url, '--sync-interval', '200ms'],
    );
    assert.equal(code, 0, err);
    assert.match(out, /split skewed over 3 regions \(region-1, region-2, region-3\)/);
    assert.match(out, /\| eventual \| skipped: eventual mode takes fixed-window and sliding-window/);
    assert.match(out, /\| escrow \| \d+ \| \d+ \| 0 \|/);
    assert.match(out, /\| write-to-all \|/);
  });

  it('bad region options are refused with the option named', async () => {
    const url = `redis://127.0.0.1:${server.port}`;
    for (const [argv, pattern] of [
      [['--regions', '1', '--redis', url], /--regions: 2 to 8 regions/],
      [['--regions', 'eu,eu', '--redis', url], /--regions: region names must differ/],
      [['--regions', '3', '--split', 'sideways', '--redis', url], /--split: 'sideways'/],
      [['--regions', '3', '--modes', 'magic', '--redis', url], /--modes: 'magic'/],
      [['--regions', '3', '--algorithms', 'gcra,token-bucket', '--redis', url], /--algorithms: with --regions/],
    ] as const) {
      const { code, err } = await runSimulate(...argv);
      assert.equal(code, 2, argv.join(' '));
      assert.match(err, pattern);
    }
  });

  it('the charts in docs/img/regions are what the commands in docs/multi-region.md draw now', async () => {
    const root = resolve(import.meta.dirname, '../../../..');
    const page = await readFile(join(root, 'docs', 'multi-region.md'), 'utf8');
    const common = /^R="(.*)"$/m.exec(page)?.[1];
    assert.ok(common !== undefined, 'the page sets R');
    const commands = [...page.matchAll(/^sluice simulate \$R (.*)$/gm)].map((m) => m[1] as string);
    assert.ok(commands.length >= 4);
    const dir = await mkdtemp(join(tmpdir(), 'sluice-regions-'));
    try {
      for (const command of commands) {
        const argv = `${common} ${command}`.split(/\s+/);
        const out = argv[argv.indexOf('--out') + 1] as string;
        argv[argv.indexOf('--redis') + 1] = `redis://127.0.0.1:${server.port}`;
        argv[argv.indexOf('--out') + 1] = join(dir, 'chart.svg');
        const { code, err } = await runSimulate(...argv);
        assert.equal(code, 0, err);
        assert.equal(
          await readFile(join(dir, 'chart.svg'), 'utf8'),
          await readFile(join(root, out), 'utf8'),
          `${out} is stale: regenerate it with the commands in docs/multi-region.md`,
        );
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
