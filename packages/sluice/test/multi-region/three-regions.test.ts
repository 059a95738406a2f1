/**
 * Three regions on one machine: three redis-servers, the sync between them through proxies that
 * delay 50 ms each way, and application servers in separate processes offering even and skewed
 * (90 % in one region) load. Escrow must never admit more than the limit — for every algorithm, by
 * that algorithm's own definition of the limit — and eventual mode must stay within the bound that
 * bound.ts states, computed from what was actually admitted and the sync lag actually measured.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { ALGORITHMS, type AlgorithmName, type PolicyOptions, resolvePolicy } from '../../src/core/policy.js';
import { counterKeys } from '../../src/stores/multi-region/eventual.js';
import { EVENTUAL_MERGE } from '../../src/stores/multi-region/eventual-lua.js';
import { leaseRecordKey, tagOf } from '../../src/stores/multi-region/keys.js';
import type { RegionPlan, RegionReport, Scenario } from './fixtures/region-child.js';
import { admissionsOf, runRegions, startTopology, type Topology } from './harness.js';
import { assertLimitKept, fixedWindowBoundBreaches, perWindow, slidingWindowBoundBreaches } from './limits-check.js';

const REGIONS = ['eu', 'us', 'ap'];
const PERIOD = 1000;
const LIMIT = 30;
const SYNC_MS = 100;
/** Offered load per scenario, all regions together: twice the limit. */
const OFFERED = 2 * LIMIT;

const policyOf = (algorithm: AlgorithmName): PolicyOptions => ({ algorithm, limit: LIMIT, period: PERIOD });

/** Shares of the offered load per region. */
const SHAPES: Record<string, Record<string, number>> = {
  even: { eu: 1 / 3, us: 1 / 3, ap: 1 / 3 },
  skewed: { eu: 0.9, us: 0.05, ap: 0.05 },
};

function scenarios(region: string, processes: number): Scenario[] {
  const out: Scenario[] = [];
  for (const [shape, split] of Object.entries(SHAPES)) {
    const rate = (OFFERED * (split[region] as number)) / processes;
    for (const algorithm of ALGORITHMS) {
      out.push({
        name: `escrow:${shape}:${algorithm}`,
        mode: 'escrow',
        policy: policyOf(algorithm),
        ratePerSecond: rate,
      });
    }
    for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
      out.push({
        name: `eventual:${shape}:${algorithm}`,
        mode: 'eventual',
        policy: policyOf(algorithm),
        ratePerSecond: rate,
      });
    }
  }
  return out;
}

/** Two application servers in eu (the busy region), one in each of the others (by default). */
function plans(
  topology: Topology,
  durationMs: number,
  perRegion: Record<string, number> = { eu: 2, us: 1, ap: 1 },
): RegionPlan[] {
  return REGIONS.flatMap((region) =>
    Array.from({ length: perRegion[region] as number }, () => ({
      region,
      ports: topology.portsFrom(region),
      syncIntervalMs: SYNC_MS,
      durationMs,
      scenarios: scenarios(region, perRegion[region] as number),
      peerTimeoutMs: 2000,
    })),
  );
}

/** The global limit of `algorithm`, checked on every admission of a scenario. */
function assertEscrowKept(reports: readonly RegionReport[], name: string, algorithm: AlgorithmName): void {
  const ts = admissionsOf(reports, name).map((a) => a.t);
  assert.ok(ts.length > 0, `${name}: something was admitted`);
  assertLimitKept(ts, algorithm, LIMIT, PERIOD, `${name}:`);
}

/**
 * Δ as the stores measured it, plus the longest local decision: admissions are stamped when the
 * request starts, and counted when Redis runs it.
 */
function lagOf(reports: readonly RegionReport[]): number {
  const lag = Math.max(...reports.map((r) => r.maxLagMs));
  const local = Math.max(...reports.flatMap((r) => r.latenciesMs));
  return lag + local;
}

function assertEventualWithinBound(reports: readonly RegionReport[], name: string, lagMs: number): void {
  const all = admissionsOf(reports, name);
  assert.ok(all.length > 0);
  const breaches = name.endsWith('fixed-window')
    ? fixedWindowBoundBreaches(all, LIMIT, PERIOD, REGIONS.length, lagMs)
    : slidingWindowBoundBreaches(all, LIMIT, PERIOD, REGIONS.length, lagMs);
  assert.deepEqual(breaches, [], `${name}: over the stated bound (Δ = ${lagMs} ms)`);
}

function assertAllAnswered(reports: readonly RegionReport[]): void {
  for (const r of reports) {
    assert.deepEqual(r.errors, [], `${r.region}: decisions failed`);
    assert.equal(r.unanswered, 0, `${r.region}: decisions never answered`);
    assert.ok(r.requests > 0);
  }
}

describe('three regions, 50 ms apart', { timeout: 120_000 }, () => {
  let topology: Topology;
  before(async () => {
    topology = await startTopology(REGIONS, 50);
  });
  after(async () => {
    await topology?.stop();
  });

  it('even and skewed load from several processes: escrow never over the limit, eventual within its bound', async () => {
    const reports = await runRegions(plans(topology, 4000));
    assertAllAnswered(reports);
    for (const shape of Object.keys(SHAPES)) {
      for (const algorithm of ALGORITHMS) assertEscrowKept(reports, `escrow:${shape}:${algorithm}`, algorithm);
      const lag = lagOf(reports);
      assertEventualWithinBound(reports, `eventual:${shape}:fixed-window`, lag);
      assertEventualWithinBound(reports, `eventual:${shape}:sliding-window`, lag);
    }
  });

  it('a region cut off for several windows under load: keeps deciding, never over in escrow, converges once healed, and a replay changes nothing', async () => {
    const reports = await runRegions(plans(topology, 6000, { eu: 1, us: 1, ap: 1 }), async (startAt) => {
      await sleepUntil(startAt + 1500);
      topology.cut('ap');
      await sleepUntil(startAt + 4500);
      topology.heal('ap');
    });
    assertAllAnswered(reports);
    for (const shape of Object.keys(SHAPES)) {
      for (const algorithm of ALGORITHMS) assertEscrowKept(reports, `escrow:${shape}:${algorithm}`, algorithm);
      // Cut off, a region decides on its own view: never more than N·L per window.
      for (const [w, n] of perWindow(
        admissionsOf(reports, `eventual:${shape}:fixed-window`).map((a) => a.t),
        PERIOD,
      )) {
        assert.ok(n <= REGIONS.length * LIMIT, `eventual window ${w}: ${n}`);
      }
    }
    await assertConvergedWithoutDoubleCounting(reports, 'eventual:even:fixed-window');
  });

  it('a load that moves eu → us → ap, with a region cut off while units move: shares follow it, never over the limit, nothing credited twice', async () => {
    const PHASE = 3 * PERIOD;
    const order = ['eu', 'us', 'ap'];
    const moving: RegionPlan[] = REGIONS.map((region) => ({
      region,
      ports: topology.portsFrom(region),
      syncIntervalMs: SYNC_MS,
      durationMs: 3 * PHASE,
      peerTimeoutMs: 2000,
      scenarios: ALGORITHMS.map((algorithm) => ({
        name: `moving:${algorithm}`,
        mode: 'escrow' as const,
        policy: policyOf(algorithm),
        ratePerSecond: OFFERED,
        activeMs: [[order.indexOf(region) * PHASE, (order.indexOf(region) + 1) * PHASE] as const],
      })),
    }));
    let started = 0;
    const reports = await runRegions(moving, async (startAt) => {
      started = startAt;
      // us has just started asking eu and ap for units: cut ap, so transfers are in flight (ap gave,
      // us has not heard) for a second and a half, then heal.
      await sleepUntil(startAt + PHASE + 150);
      topology.cut('ap');
      await sleepUntil(startAt + PHASE + 1650);
      topology.heal('ap');
    });
    assertAllAnswered(reports);
    const servers = REGIONS.map((r) => new Redis((topology.servers[r] as { port: number }).port, '127.0.0.1'));
    try {
      for (const algorithm of ALGORITHMS) {
        const name = `moving:${algorithm}`;
        assertEscrowKept(reports, name, algorithm);
        const all = admissionsOf(reports, name);
        const shares: string[] = [];
        for (const [phase, region] of order.entries()) {
          // The busy region's best whole window of its phase: more than the third of the limit it
          // started with means units moved to it.
          const from = Math.ceil((started + phase * PHASE) / PERIOD);
          const to = Math.floor((started + (phase + 1) * PHASE) / PERIOD);
          const counts = [
            ...perWindow(
              all.filter((a) => a.region === region).map((a) => a.t),
              PERIOD,
            ),
          ]
            .filter(([w]) => w >= from && w < to)
            .map(([, n]) => n);
          shares.push(`${region} ${counts.join('/')}`);
          if (phase > 0)
            assert.ok(
              Math.max(0, ...counts) > LIMIT / 3,
              `${name}: ${region} never got more than its own third (${counts})`,
            );
        }
        const first = Math.ceil(started / PERIOD);
        const last = Math.floor((started + 3 * PHASE) / PERIOD);
        const whole = all.filter((a) => a.t >= first * PERIOD && a.t < last * PERIOD).length;
        const pct = ((100 * whole) / ((last - first) * LIMIT)).toFixed(0);
        console.log(
          `# ${name}: ${pct} % of the limit over ${last - first} windows (busy region: ${shares.join(', ')})`,
        );
        // The transfer records agree: what each region credited from another is exactly what that
        // region gave it (units lost in the partition were credited after the heal, and only once).
        const key = leaseRecordKey(tagOf('t:escrow:', name), resolvePolicy(policyOf(algorithm)).id);
        // The record and its transfer hash (the fields named with a ':').
        const recs = await Promise.all(
          servers.map(async (c) => ({ ...(await c.hgetall(key)), ...(await c.hgetall(`${key}~`)) })),
        );
        for (const [i, giver] of REGIONS.entries()) {
          for (const [j, taker] of REGIONS.entries()) {
            const g = recs[i] as Record<string, string>;
            const t = recs[j] as Record<string, string>;
            if (i === j || g[`gi:${taker}`] !== t.inc || t[`ri:${giver}`] !== g.inc) continue;
            assert.equal(
              Number(t[`r:${giver}`] ?? 0),
              Number(g[`g:${taker}`] ?? 0),
              `${name}: ${taker} credited what ${giver} gave it`,
            );
          }
        }
      }
    } finally {
      for (const c of servers) c.disconnect();
    }
  });

  /**
   * After the heal every region holds, for every window, the same G-counter, whose fields are exactly
   * what each region admitted (so nothing was counted twice), and merging every region's fields into
   * every region again — a replay of the sync — changes nothing.
   */
  async function assertConvergedWithoutDoubleCounting(reports: readonly RegionReport[], name: string): Promise<void> {
    const policy = resolvePolicy(policyOf('fixed-window'));
    const clients = REGIONS.map((r) => new Redis((topology.servers[r] as { port: number }).port, '127.0.0.1'));
    try {
      const admitted = admissionsOf(reports, name);
      const windows = [...new Set(admitted.map((a) => Math.floor(a.t / PERIOD)))];
      for (const w of windows) {
        const { cur, marker } = counterKeys('t:eventual:', name, policy, w * PERIOD);
        const views = await Promise.all(clients.map((c) => c.hgetall(cur)));
        const expected: Record<string, string> = {};
        for (const r of REGIONS) {
          const n = admitted.filter((a) => a.region === r && Math.floor(a.t / PERIOD) === w).length;
          if (n > 0) expected[`+${r}`] = String(n);
        }
        for (const [i, view] of views.entries()) {
          assert.deepEqual(view, expected, `window ${w} as region ${REGIONS[i]} sees it`);
        }
        // Replay: every region's own fields, sent again to every region, twice.
        for (let round = 0; round < 2; round++) {
          for (const [i, from] of REGIONS.entries()) {
            const own = views[i] as Record<string, string>;
            const ttl = await (clients[i] as Redis).pttl(cur);
            for (const c of clients) {
              await c.eval(
                EVENTUAL_MERGE.source,
                2,
                cur,
                marker,
                from,
                own[`+${from}`] ?? '0',
                own[`-${from}`] ?? '0',
                String(Math.max(ttl, 1000)),
                String(w),
              );
            }
          }
        }
        for (const c of clients) assert.deepEqual(await c.hgetall(cur), expected, `window ${w} after the replay`);
      }
    } finally {
      for (const c of clients) c.disconnect();
    }
  }
});

function sleepUntil(at: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
}
