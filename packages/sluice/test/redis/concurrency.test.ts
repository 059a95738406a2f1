/**
 * Exactness under concurrency: 4 processes, each firing 250 concurrent checks at one key with a limit
 * of 100, admit exactly 100 in total, for every algorithm (server clock, batching and local cache on);
 * and a request under three limits (150, 100, 120) admits exactly 100 and takes exactly 100 from each.
 * Warm (connected clients), and cold: each process fires its checks right after creating a new client
 * and store with the default options, before the connection exists — none may be decided without Redis.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { createInterface, type Interface } from 'node:readline';
import { after, before, describe, it, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { ALGORITHMS, resolvePolicy } from '../../src/core/policy.js';
import { createRedisStore } from '../../src/stores/redis/index.js';

const CHILD = fileURLToPath(new URL('./fixtures/concurrency-child.ts', import.meta.url));
const PROCESSES = 4;

interface Answer {
  allowed?: number;
  degraded?: number;
  errors?: number;
  timeouts?: number;
  scriptLoads?: number;
  error?: string;
}

/** The machine's CPU ticks so far, busy and in all (Linux /proc/stat; undefined elsewhere). */
function cpuTicks(): { busy: number; total: number } | undefined {
  if (!existsSync('/proc/stat')) return undefined;
  const fields =
    readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]?.trim().split(/\s+/).slice(1, 9).map(Number) ?? [];
  const total = fields.reduce((a, b) => a + b, 0);
  // idle and iowait are the 4th and 5th fields; steal (8th) counts as busy: another guest had the core.
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
}

/** The share of the machine's CPU that was busy since `since` (cpuTicks()), when it can be told. */
function busyShare(since: { busy: number; total: number } | undefined): number | undefined {
  const now = cpuTicks();
  if (since === undefined || now === undefined || now.total === since.total) return undefined;
  return (now.busy - since.busy) / (now.total - since.total);
}

/**
 * Whether the machine had no CPU to spare while the checks ran (`busy`: busyShare() over them), or
 * more runnable processes than twice the cores: then scheduling delays alone can exceed 50 ms, and a
 * reply can time out whatever the store does. Measured over the scenario too, because the load average
 * lags a minute, and a slow or shared VM is saturated by this test's own 4 processes and Redis.
 */
const overloaded = (busy: number | undefined) =>
  (os.loadavg()[0] ?? 0) > 2 * os.cpus().length || (busy !== undefined && busy >= 0.9);

interface Child {
  process: ChildProcess;
  lines: Interface;
  next(): Promise<string>;
}

function spawnChild(port: number, mode: 'warm' | 'cold'): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, String(port), mode], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout as NonNullable<typeof child.stdout> });
  const queue: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => {
    const w = waiting.shift();
    if (w) w(line);
    else queue.push(line);
  });
  return {
    process: child,
    lines,
    next: () => {
      const line = queue.shift();
      return line === undefined ? new Promise((resolve) => waiting.push(resolve)) : Promise.resolve(line);
    },
  };
}

for (const mode of ['warm', 'cold'] as const) {
  describe(`concurrency (${mode}): 4 processes × 250 concurrent checks`, () => {
    let server: RedisServerHandle;
    let children: Child[] = [];
    let run = 0;

    before(async () => {
      server = await startRedis();
      children = Array.from({ length: PROCESSES }, () => spawnChild(server.port, mode));
      for (const c of children) assert.equal(await c.next(), 'ready');
    });
    after(async () => {
      for (const c of children) {
        c.process.stdin?.end();
        c.lines.close();
      }
      await Promise.all(
        children.map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.process.exitCode !== null) return resolve();
              const timer = setTimeout(() => c.process.kill('SIGKILL'), 3000);
              c.process.once('exit', () => {
                clearTimeout(timer);
                resolve();
              });
            }),
        ),
      );
      await server?.stop();
    });

    /**
     * Sends a scenario to every child; returns the total admitted, or undefined when a cold run on an
     * overloaded machine had commands that genuinely timed out (then the exact count is not decidable).
     */
    async function fire(line: string, t: TestContext): Promise<number | undefined> {
      const ticks = cpuTicks();
      for (const c of children) c.process.stdin?.write(`${line}\n`);
      const answers = await Promise.all(children.map((c) => c.next()));
      let total = 0;
      let timedOut = 0;
      for (const a of answers) {
        const parsed = JSON.parse(a) as Answer;
        assert.equal(parsed.error, undefined);
        if (mode === 'cold') {
          // What readiness guarantees, whatever the machine's load: nothing failed fast or unready, and no
          // first batch paid a NOSCRIPT round trip.
          assert.equal(parsed.errors, 0, 'no command failed (fail-fast while connecting, NOSCRIPT, not ready)');
          assert.equal(parsed.scriptLoads, 0, 'the scripts were loaded before the first decisions');
          timedOut += parsed.timeouts ?? 0;
        }
        total += parsed.allowed as number;
        if (!parsed.timeouts) assert.equal(parsed.degraded, 0, 'every decision was taken by Redis');
      }
      if (timedOut > 0) {
        // A 50 ms timeout measures the machine when it is this busy (the default, on purpose here).
        const busy = busyShare(ticks);
        const machine = `load average ${os.loadavg()[0]} on ${os.cpus().length} cores, CPU ${Math.round((busy ?? 0) * 100)} % busy`;
        assert.ok(overloaded(busy), `${timedOut} commands timed out on a machine that is not overloaded (${machine})`);
        t.diagnostic(`${timedOut} commands timed out: ${machine}`);
        return undefined;
      }
      return total;
    }

    for (const algorithm of ALGORITHMS) {
      it(`${algorithm}: exactly 100 of 1000 pass`, async (t) => {
        const total = await fire(`${algorithm} 1 ${++run}`, t);
        if (total !== undefined) assert.equal(total, 100);
      });

      it(`${algorithm}: three limits, exactly 100 pass and none is over-consumed`, async (t) => {
        const id = ++run;
        const total = await fire(`${algorithm} 3 ${id}`, t);
        if (total === undefined) return;
        assert.equal(total, 100);
        const client = new Redis(server.port, '127.0.0.1');
        const store = createRedisStore({ client, localCache: false, timeoutMs: 5000 });
        try {
          const remaining = async (name: string, limit: number) => {
            const policy = resolvePolicy({ algorithm, limit, period: '10d' });
            const d = await store.check(`${name}:${id}`, { ...policy, id: `${name}~${policy.id}` }, 1, 0, false);
            return d.remaining;
          };
          assert.deepEqual(
            [await remaining('a', 150), await remaining('b', 100), await remaining('c', 120)],
            [50, 0, 20],
          );
        } finally {
          await store.close();
          client.disconnect();
        }
      });
    }
  });
}
