/**
 * Three (or N) regions on one machine: a redis-server per region, and between every two regions a
 * delaying TCP proxy (test/helpers/delay-proxy.ts), so a region reaches its own Redis directly and
 * the others' over a slow link that can be cut. Also runs application servers (fixtures/
 * region-child.ts) as separate processes and collects what they admitted.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type DelayProxy, startDelayProxy } from '../../../../test/helpers/delay-proxy.js';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import type { RegionPlan, RegionReport } from './fixtures/region-child.js';

const CHILD = fileURLToPath(new URL('./fixtures/region-child.ts', import.meta.url));

/** Regions, their Redis servers and the links between them. */
export interface Topology {
  readonly regions: readonly string[];
  readonly servers: Readonly<Record<string, RedisServerHandle>>;
  /** The Redis ports as seen from `region`: its own directly, the others through the proxies. */
  portsFrom(region: string): Record<string, number>;
  /** Cuts every link to and from `region` (a partition). */
  cut(region: string): void;
  /** Restores them. */
  heal(region: string): void;
  stop(): Promise<void>;
}

/** Starts a redis-server per region and a proxy delaying `delayMs` each way between every two. */
export async function startTopology(regions: readonly string[], delayMs: number): Promise<Topology> {
  const servers: Record<string, RedisServerHandle> = {};
  const links = new Map<string, DelayProxy>();
  for (const r of regions) servers[r] = await startRedis();
  for (const from of regions) {
    for (const to of regions) {
      if (from !== to)
        links.set(`${from}>${to}`, await startDelayProxy((servers[to] as RedisServerHandle).port, delayMs));
    }
  }
  const touching = (region: string) => [...links].filter(([k]) => k.split('>').includes(region)).map(([, p]) => p);
  return {
    regions,
    servers,
    portsFrom: (region) =>
      Object.fromEntries(
        regions.map((r) => [
          r,
          r === region ? (servers[r] as RedisServerHandle).port : (links.get(`${region}>${r}`) as DelayProxy).port,
        ]),
      ),
    cut: (region) => {
      for (const p of touching(region)) p.cut();
    },
    heal: (region) => {
      for (const p of touching(region)) p.heal();
    },
    stop: async () => {
      await Promise.all([...links.values()].map((p) => p.close()));
      await Promise.all(Object.values(servers).map((s) => s.stop()));
    },
  };
}

/**
 * Runs one application-server process per plan, starts them together (once every one is ready, a
 * little later) and returns their reports. `during(startAt)` runs in this process meanwhile (e.g.
 * to cut a link at a given instant).
 */
export async function runRegions(
  plans: readonly RegionPlan[],
  during?: (startAt: number) => Promise<void>,
): Promise<RegionReport[]> {
  const children = plans.map((plan) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(plan)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const lines: string[] = [];
    const waiters: ((line: string) => void)[] = [];
    createInterface({ input: child.stdout as NonNullable<typeof child.stdout> }).on('line', (line) => {
      const w = waiters.shift();
      if (w) w(line);
      else lines.push(line);
    });
    const next = () =>
      new Promise<string>((resolve, reject) => {
        const line = lines.shift();
        if (line !== undefined) return resolve(line);
        waiters.push(resolve);
        child.once('exit', (code) => reject(new Error(`region child exited (${code})`)));
      });
    return { child, next };
  });
  try {
    for (const c of children) {
      const line = await c.next();
      if (line !== 'ready') throw new Error(`region child: ${line}`);
    }
    const startAt = Date.now() + 300;
    for (const c of children) c.child.stdin?.write(`${startAt}\n`);
    const reports = Promise.all(
      children.map(async (c) => {
        const line = await c.next();
        const report = JSON.parse(line) as RegionReport & { fatal?: string };
        if (report.fatal) throw new Error(`region child failed: ${report.fatal}`);
        return report;
      }),
    );
    if (during) await during(startAt);
    return await reports;
  } finally {
    for (const c of children) {
      c.child.stdin?.end();
      if (c.child.exitCode === null) {
        await new Promise((resolve) => {
          const timer = setTimeout(() => {
            c.child.kill('SIGKILL');
            resolve(undefined);
          }, 5000);
          c.child.once('exit', () => {
            clearTimeout(timer);
            resolve(undefined);
          });
        });
      }
    }
  }
}

/** Every admission of a scenario across the reports, with its region, in time order. */
export function admissionsOf(reports: readonly RegionReport[], scenario: string): { t: number; region: string }[] {
  return reports
    .flatMap((r) => (r.admitted[scenario] ?? []).map((t) => ({ t, region: r.region })))
    .sort((a, b) => a.t - b.t);
}

/** Scripts the given Redis nodes have run so far (INFO commandstats, EVALSHA and EVAL). */
export async function scriptsRun(nodes: readonly { info(section: string): Promise<string> }[]): Promise<number> {
  let calls = 0;
  for (const node of nodes) {
    for (const m of String(await node.info('commandstats')).matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)) {
      calls += Number(m[1]);
    }
  }
  return calls;
}
