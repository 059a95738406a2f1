/**
 * `sluice simulate --regions N`: a trace split across N regions, run through the real multi-region
 * store (`sluice/multi-region`: its scripts, sync loop, merges and escrow transfers, unchanged) with
 * *virtual* time, beside a write-to-every-region baseline in the manner of @upstash/ratelimit.
 *
 * How time is virtual. Each region gets its own Redis database, and every region reaches the others'
 * through a client that holds each command for the one-way latency in virtual time, runs it, and
 * holds the reply as long again. A scheduler runs the events in virtual time order: the trace's
 * requests (each decided at its instant, with the store's `nowMs`), the sync ticks (`store.sync()`
 * every sync interval, the store's clock set to the virtual now) and the delayed commands. After each
 * event it lets every Redis reply and continuation settle before the next, so a trace of an hour
 * takes as long as its commands — and the numbers are those of the code that runs in production.
 */

import { isBucketAlgorithm, type PolicyOptions, resolvePolicy, SluiceError } from 'sluice';
import { createMultiRegionStore, type MultiRegionStore } from 'sluice/multi-region';
import type { RedisClientLike } from 'sluice/redis';
import type { Trace } from './trace.js';

/** The ways the trace is split across the regions. */
export const SPLITS = ['even', 'skewed', 'moving'] as const;
export type Split = (typeof SPLITS)[number];

/** The modes compared. */
export const REGION_MODES = ['eventual', 'escrow', 'write-to-all'] as const;
export type RegionMode = (typeof REGION_MODES)[number];

/** A Redis client the simulation sends raw commands to (ioredis' `call`). */
export interface RawRedis {
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
}

/** What to simulate. */
export interface RegionSimulationOptions {
  readonly trace: Trace;
  readonly policy: PolicyOptions;
  /** Region names (2–8). */
  readonly regions: readonly string[];
  readonly split: Split;
  /** `moving`: the periods the load stays in one region before it moves to the next. @default 3 */
  readonly movePeriods?: number;
  readonly latencyMs: number;
  readonly syncIntervalMs: number;
  readonly modes: readonly RegionMode[];
  /** A client to region `i`'s own Redis database (the caller opens them; they are flushed first). */
  readonly redis: (regionIndex: number) => RawRedis;
  /** Key prefix, so that a run never reads another's keys. @default 'sluice:sim:' */
  readonly prefix?: string;
  readonly onProgress?: (done: number, total: number) => void;
}

/** One mode's outcome. */
export interface RegionModeRun {
  readonly mode: RegionMode;
  /** Why the mode was not run (eventual mode takes the counter algorithms only), or undefined. */
  readonly skipped?: string;
  /** Units admitted per window (aligned to the period), from the first window of the trace. */
  readonly perWindow: readonly number[];
  /** Units offered per window. */
  readonly offeredPerWindow: readonly number[];
  readonly admitted: number;
  /** The most any window admitted. */
  readonly maxPerWindow: number;
  /**
   * How far over the limit it went, by the algorithm's own measure: per window for the window
   * algorithms; for the buckets, the most admitted in any interval beyond burst + rate × its length
   * (a bucket may admit its burst and its refill in one window). 0 when never.
   */
  readonly maxOver: number;
  /** Mean over-admission per window, units (window algorithms; for the buckets, null). */
  readonly meanOver: number | null;
  /**
   * Windows where at least the limit was offered: what was admitted, as a share of the limit (1 =
   * the limit admitted every such window; less is under-admission).
   */
  readonly useOfLimit: number;
  /** Eventual mode: the bound the store states for the measured lag and the offered rate. */
  readonly statedBound?: number;
  /** The longest replication lag the sync loops measured (virtual ms). */
  readonly maxLagMs?: number;
}

/** The outcome of a simulation. */
export interface RegionSimulationResult {
  readonly trace: Trace;
  readonly limit: number;
  readonly periodMs: number;
  readonly algorithm: string;
  readonly regions: readonly string[];
  readonly split: Split;
  readonly latencyMs: number;
  readonly syncIntervalMs: number;
  readonly runs: readonly RegionModeRun[];
}

/** Which region each request of the trace arrives at. */
export function regionOf(
  split: Split,
  index: number,
  atMs: number,
  n: number,
  periodMs: number,
  movePeriods = 3,
): number {
  if (split === 'even') return index % n;
  // 90 % in the first region, the rest spread over the others.
  if (split === 'skewed') return index % 10 === 9 ? 1 + (Math.floor(index / 10) % (n - 1)) : 0;
  return Math.floor(atMs / (movePeriods * periodMs)) % n;
}

/**
 * How far sorted admission instants exceed a bucket's envelope: the largest
 * (admissions in [a, b]) − burst − (b − a)·limit/period over every pair of admissions.
 */
export function bucketExcess(ts: readonly number[], burst: number, limit: number, periodMs: number): number {
  // (j − i + 1) − (t_j − t_i)·r = (j − t_j·r) − (i − t_i·r) + 1: keep the smallest i − t_i·r seen.
  const r = limit / periodMs;
  let lowest = Number.POSITIVE_INFINITY;
  let worst = Number.NEGATIVE_INFINITY;
  ts.forEach((t, j) => {
    lowest = Math.min(lowest, j - t * r);
    worst = Math.max(worst, j - t * r - lowest + 1 - burst);
  });
  return ts.length === 0 ? 0 : worst;
}

/**
 * Events in virtual time: a min-heap would do; traces are sorted and syncs regular, so a sorted insert
 * is enough. Events at the same instant run in the order of their `lane`, then in the order they were
 * scheduled: a link's messages are scheduled when real Redis answers, and answers from different
 * connections arrive in whatever order the machine's load gives them — two regions' sync pushes
 * reaching a third at the same instant must not take its spare units in a different order each run.
 */
class Scheduler {
  now = 0;
  private readonly queue: { at: number; lane: number; seq: number; run: () => void }[] = [];
  private seq = 0;
  /** Real Redis commands not answered yet. */
  inFlight = 0;

  at(at: number, run: () => void, lane = 0): void {
    const task = { at: Math.max(at, this.now), lane, seq: this.seq++, run };
    let i = this.queue.length;
    while (i > 0) {
      const before = this.queue[i - 1] as { at: number; lane: number };
      if (before.at < task.at || (before.at === task.at && before.lane <= task.lane)) break;
      i--;
    }
    this.queue.splice(i, 0, task);
  }

  /** Runs every event up to `until` (inclusive), in order, each one settled before the next. */
  async runUntil(until: number): Promise<void> {
    for (;;) {
      await this.settle();
      const next = this.queue[0];
      if (next === undefined || next.at > until) break;
      this.queue.shift();
      this.now = next.at;
      next.run();
    }
    this.now = Math.max(this.now, until);
  }

  /** Runs events, a step of `stepMs` at a time, until `done` settles (at most 10 000 steps). */
  async drive(done: Promise<unknown>, stepMs: number): Promise<void> {
    let settled = false;
    const mark = () => {
      settled = true;
    };
    done.then(mark, mark);
    for (let i = 0; i < 10_000 && !settled; i++) {
      if (this.queue.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      else await this.runUntil(this.now + Math.max(1, stepMs));
    }
    await done;
  }

  /** Waits until no real command is in flight and no continuation is left to run. */
  private async settle(): Promise<void> {
    let quiet = 0;
    while (quiet < 2) {
      await new Promise((resolve) => setImmediate(resolve));
      if (this.inFlight > 0) {
        quiet = 0;
        await new Promise((resolve) => setTimeout(resolve, 0));
      } else quiet++;
    }
  }
}

/** A node-redis-shaped client reaching `target` after `latencyMs` of virtual time each way. */
/** `lane`: this link's place among the links (see Scheduler), the same in every run. */
function link(target: RawRedis, latencyMs: number, clock: Scheduler, lane: number): RedisClientLike {
  const run = (args: string[]) => {
    clock.inFlight++;
    return target.call(args[0] as string, ...args.slice(1)).finally(() => {
      clock.inFlight--;
    });
  };
  return {
    isReady: true,
    sendCommand(args: string[]): Promise<unknown> {
      if (latencyMs === 0) return run(args);
      return new Promise((resolve, reject) => {
        clock.at(
          clock.now + latencyMs,
          () => {
            run(args).then(
              (reply) => clock.at(clock.now + latencyMs, () => resolve(reply), lane),
              (error: unknown) => clock.at(clock.now + latencyMs, () => reject(error), lane),
            );
          },
          lane,
        );
      });
    },
  };
}

/** Runs the trace through every mode asked for. */
export async function simulateRegions(options: RegionSimulationOptions): Promise<RegionSimulationResult> {
  const policy = resolvePolicy(options.policy);
  const n = options.regions.length;
  if (n < 2 || n > 8) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `regions: 2 to 8 regions, got ${n}`, { option: 'regions' });
  }
  const events = options.trace.events;
  const first = Math.floor((events[0]?.atMs ?? 0) / policy.periodMs);
  const last = Math.floor((events[events.length - 1]?.atMs ?? 0) / policy.periodMs);
  const windows = last - first + 1;
  const where = events.map((e, i) => regionOf(options.split, i, e.atMs, n, policy.periodMs, options.movePeriods ?? 3));
  const offeredPerWindow = new Array<number>(windows).fill(0);
  for (const e of events) {
    const w = Math.floor(e.atMs / policy.periodMs) - first;
    offeredPerWindow[w] = (offeredPerWindow[w] as number) + e.cost;
  }
  const total = events.length * options.modes.length;
  let done = 0;

  const runs: RegionModeRun[] = [];
  for (const mode of options.modes) {
    const perWindow = new Array<number>(windows).fill(0);
    const instants: number[] = [];
    const admit = (atMs: number, cost: number) => {
      for (let u = 0; u < cost; u++) instants.push(atMs);
      // Escrow may decide a request as of a later instant (time never goes back for a key): that
      // can be past the trace's last window.
      const w = Math.floor(atMs / policy.periodMs) - first;
      while (perWindow.length <= w) perWindow.push(0);
      perWindow[w] = (perWindow[w] as number) + cost;
    };
    let extra: Pick<RegionModeRun, 'statedBound' | 'maxLagMs' | 'skipped'> = {};
    if (mode === 'write-to-all') {
      writeToAll(options, policy.limit, policy.periodMs, where, admit);
    } else if (mode === 'eventual' && policy.algorithm !== 'fixed-window' && policy.algorithm !== 'sliding-window') {
      extra = { skipped: `eventual mode takes fixed-window and sliding-window, not ${policy.algorithm}` };
    } else {
      extra = await throughStores(options, mode, policy, where, admit, () => {
        done++;
        if (done % 2000 === 0) options.onProgress?.(done, total);
      });
    }
    done = runs.length * events.length + events.length;
    const bucketOver = isBucketAlgorithm(policy.algorithm)
      ? Math.max(
          0,
          Math.ceil(
            bucketExcess(
              instants.sort((a, b) => a - b),
              policy.burst,
              policy.limit,
              policy.periodMs,
            ),
          ),
        )
      : undefined;
    runs.push(summarizeMode(mode, perWindow, offeredPerWindow, policy.limit, extra, bucketOver));
  }
  return {
    trace: options.trace,
    limit: policy.limit,
    periodMs: policy.periodMs,
    algorithm: policy.algorithm,
    regions: options.regions,
    split: options.split,
    latencyMs: options.latencyMs,
    syncIntervalMs: options.syncIntervalMs,
    runs,
  };
}

function summarizeMode(
  mode: RegionMode,
  perWindow: number[],
  offeredPerWindow: number[],
  limit: number,
  extra: Pick<RegionModeRun, 'statedBound' | 'maxLagMs' | 'skipped'>,
  bucketOver: number | undefined,
): RegionModeRun {
  const over = perWindow.map((a) => Math.max(0, a - limit));
  const full = perWindow.filter((_, w) => (offeredPerWindow[w] as number) >= limit);
  return {
    mode,
    ...extra,
    perWindow,
    offeredPerWindow,
    admitted: perWindow.reduce((a, b) => a + b, 0),
    maxPerWindow: Math.max(0, ...perWindow),
    maxOver: bucketOver ?? Math.max(0, ...over),
    meanOver: bucketOver === undefined ? over.reduce((a, b) => a + b, 0) / Math.max(1, over.length) : null,
    useOfLimit: full.length === 0 ? 1 : full.reduce((a, b) => a + Math.min(b, limit), 0) / (full.length * limit),
  };
}

/**
 * The baseline: every request written to every region's set of the window, allowed by the first
 * reply (the local region's, at once) when that set had room; the other regions hear of it one
 * latency later and add it if their set still has room (fixed window, as @upstash/ratelimit's
 * MultiRegionRatelimit).
 */
function writeToAll(
  options: RegionSimulationOptions,
  limit: number,
  periodMs: number,
  where: readonly number[],
  admit: (atMs: number, cost: number) => void,
): void {
  const n = options.regions.length;
  const sets = Array.from({ length: n }, () => new Map<number, number>());
  // Writes arriving at remote regions, in time order (a latency after each request).
  const arrivals: { at: number; region: number; window: number; cost: number }[] = [];
  let next = 0;
  const deliver = (upTo: number) => {
    while (next < arrivals.length && (arrivals[next] as { at: number }).at <= upTo) {
      const a = arrivals[next++] as (typeof arrivals)[number];
      const set = sets[a.region] as Map<number, number>;
      const count = set.get(a.window) ?? 0;
      if (count + a.cost <= limit) set.set(a.window, count + a.cost);
    }
  };
  options.trace.events.forEach((e, i) => {
    deliver(e.atMs);
    const r = where[i] as number;
    const window = Math.floor(e.atMs / periodMs);
    const set = sets[r] as Map<number, number>;
    const count = set.get(window) ?? 0;
    if (count + e.cost <= limit) {
      set.set(window, count + e.cost);
      admit(e.atMs, e.cost);
    }
    for (let other = 0; other < n; other++) {
      if (other !== r) arrivals.push({ at: e.atMs + options.latencyMs, region: other, window, cost: e.cost });
    }
  });
}

/** The trace through one multi-region store per region, on virtual time. */
async function throughStores(
  options: RegionSimulationOptions,
  mode: 'eventual' | 'escrow',
  policy: ReturnType<typeof resolvePolicy>,
  where: readonly number[],
  admit: (atMs: number, cost: number) => void,
  tick: () => void,
): Promise<Pick<RegionModeRun, 'statedBound' | 'maxLagMs'>> {
  const { regions, latencyMs, syncIntervalMs } = options;
  const n = regions.length;
  const events = options.trace.events;
  const clock = new Scheduler();
  clock.now = events[0]?.atMs ?? 0;
  const raw = regions.map((_, i) => options.redis(i));
  const prefix = `${options.prefix ?? 'sluice:sim:'}${mode}:`;
  const open = (keys: string) =>
    regions.map((region, i) =>
      createMultiRegionStore({
        region,
        regions: Object.fromEntries(
          regions.map((other, j) => [other, link(raw[j] as RawRedis, i === j ? 0 : latencyMs, clock, 1 + i * n + j)]),
        ),
        mode,
        prefix: keys,
        syncIntervalMs,
        autoSync: false,
        clock: { now: () => clock.now },
        // Real-time limits would not mean anything here: every wait is virtual.
        timeoutMs: 60_000,
        peerTimeoutMs: 60_000,
        onDecided: (e) => {
          if (keys === prefix && e.decision.allowed && e.cost > 0) admit(e.atMs, e.cost);
        },
      }),
    );
  // A first run loads the scripts into Redis (a script unknown there costs a round trip more), so
  // that every run starts alike: the numbers of one trace are the same every time.
  const warm = open(`${prefix}warm:`);
  await clock.drive(
    Promise.all(warm.map((s) => s.check('warm', policy, 1, clock.now, true).then(() => s.sync()))),
    latencyMs,
  );
  await clock.drive(Promise.all(warm.map((s) => s.close())), latencyMs);
  for (const r of raw) await r.call('FLUSHDB');
  clock.now = events[0]?.atMs ?? 0;
  const stores: MultiRegionStore[] = open(prefix);
  const syncs: Promise<void>[] = [];
  const end = (events[events.length - 1]?.atMs ?? 0) + 1;
  for (let t = clock.now - (clock.now % syncIntervalMs) + syncIntervalMs; t <= end; t += syncIntervalMs) {
    clock.at(t, () => {
      for (const s of stores) syncs.push(s.sync().catch(() => undefined));
    });
  }
  events.forEach((e, i) => {
    clock.at(e.atMs, () => {
      void (stores[where[i] as number] as MultiRegionStore).check('sim', policy, e.cost, e.atMs, true).finally(tick);
    });
  });
  await clock.runUntil(end);
  // Let the last syncs land (their commands are in the scheduler) before reading the lag.
  await clock.drive(Promise.all(syncs), latencyMs);
  const maxLagMs = Math.max(0, ...stores.flatMap((s) => s.syncStatus().map((p) => p.maxLagMs)));
  const offeredRate = (events.reduce((a, e) => a + e.cost, 0) * 1000) / Math.max(1, end - (events[0]?.atMs ?? 0));
  const statedBound =
    mode === 'eventual'
      ? (stores[0] as MultiRegionStore).bound(policy, {
          ratePerSecond: (offeredRate * (regions.length - 1)) / regions.length,
        }).maxPerWindow
      : undefined;
  // Closing sends what is pending once more: through the virtual links too.
  await clock.drive(Promise.all(stores.map((s) => s.close().catch(() => undefined))), latencyMs);
  return { maxLagMs, ...(statedBound === undefined ? {} : { statedBound }) };
}
