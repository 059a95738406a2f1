/**
 * One row of the overload benchmark: a fresh upstream and proxy (with one limiter or none), a load that
 * slows the upstream down part way, and the row's figures: critical success and p99 per phase, goodput,
 * when the limit settles, the final limit, and what was shed.
 */
import type { IncomingMessage } from 'node:http';
import { rateLimit } from '../../packages/sluice/src/adapters/node.js';
import type { AdaptiveLimiter } from '../../packages/sluice/src/adaptive/index.js';
import { fmt } from './measure.js';
import type { Callers } from './overload-callers.js';
import { type Load, offerLoadApart, quantile, type Sample, send, startProxy, startUpstream } from './overload-load.js';

/** The upstream and the run's timing. */
export interface Setup {
  capacity: number;
  serviceMs: number;
  slowdown: number;
  beforeMs: number;
  afterMs: number;
  /** A request slower than this failed (the client's patience). */
  timeoutMs: number;
  /** p99 through the proxy with no load, at the service time before and after the slowdown. */
  unloadedP99: { before: number; after: number };
}

const pct = (n: number, of: number) => (of === 0 ? '-' : `${fmt((100 * n) / of, 1)} %`);

/** The first time after the change from which the limit stays within 25 % of where it ends. */
function settleMs(limits: { atMs: number; limit: number }[], changeMs: number): number | undefined {
  const after = limits.filter((l) => l.atMs >= changeMs);
  const tail = after.slice(-10).map((l) => l.limit);
  const final = tail.reduce((a, b) => a + b, 0) / Math.max(1, tail.length);
  let settled: number | undefined;
  for (const l of after) {
    if (Math.abs(l.limit - final) > 0.25 * final) settled = undefined;
    else settled ??= l.atMs - changeMs;
  }
  return settled;
}

/**
 * The critical p99 of a phase's steady state against the unloaded p99 at the same service time. Before:
 * sent from 1 s (the limits start at 20) until a client timeout before the change (later ones may finish
 * at the slower speed). After: sent from 1 s after the change (requests caught in the change, and the
 * limit's re-learning, are in the success column, not here).
 */
function p99Cell(critical: Sample[], setup: Setup, before: boolean): string {
  const { beforeMs, timeoutMs } = setup;
  const inWindow = (s: Sample) =>
    before ? s.atMs >= 1000 && s.atMs < beforeMs - timeoutMs : s.atMs >= beforeMs + 1000;
  const ok = critical.filter((s) => s.status === 200 && s.ms <= timeoutMs && inWindow(s)).map((s) => s.ms);
  const p99 = quantile(ok, 0.99);
  const unloaded = before ? setup.unloadedP99.before : setup.unloadedP99.after;
  return Number.isNaN(p99) ? 'none succeeded' : `${fmt(p99, 0)} ms (${fmt(p99 / unloaded, 1)}×)`;
}

/** Runs `load` through a proxy guarded by `limiter` (or none); answers the row's cells after `name`. */
export async function runRow(
  setup: Setup,
  limiter: AdaptiveLimiter | undefined,
  load: Omit<Load, 'url'> | Omit<Callers, 'url'>,
): Promise<string[]> {
  const { capacity, serviceMs, slowdown, beforeMs, afterMs, timeoutMs } = setup;
  const upstream = await startUpstream(capacity, serviceMs);
  const priority = (req: IncomingMessage) => (req.headers['x-priority'] === 'critical' ? 'critical' : 'normal');
  const proxy = await startProxy(upstream.url, limiter && rateLimit({ adaptive: { limiter, priority } }));
  const limits: { atMs: number; limit: number }[] = [];
  let slowed = false;
  const samples = await offerLoadApart({ ...load, url: proxy.url }, (at) => {
    if (limiter) limits.push({ atMs: at, limit: limiter.limit });
    if (!slowed && at >= beforeMs) {
      slowed = true;
      void send(`${upstream.url}/factor?f=${slowdown}`, {}, 1000);
    }
  });
  proxy.server.closeAllConnections();
  proxy.server.close();
  upstream.stop();
  // Success: a 200 within the client's patience (the socket timeout alone lets a trickling answer run longer).
  const ok = (s: Sample) => s.status === 200 && s.ms <= timeoutMs;
  const critical = samples.filter((s) => s.critical);
  const cell = (before: boolean) => {
    const inPhase = (s: Sample) => s.atMs < beforeMs === before;
    const crit = critical.filter(inPhase);
    const good = samples.filter((s) => inPhase(s) && ok(s)).length;
    const capacityRps = (capacity * 1000) / (serviceMs * (before ? 1 : slowdown));
    return [pct(crit.filter(ok).length, crit.length), pct(good / ((before ? beforeMs : afterMs) / 1000), capacityRps)];
  };
  const [critBefore, goodBefore] = cell(true);
  const [critAfter, goodAfter] = cell(false);
  // BENCH_OVERLOAD_TRACE=1: the limit every half second, on stderr (for looking into a row).
  if (process.env.BENCH_OVERLOAD_TRACE && limiter)
    console.error(
      limits
        .filter((_, i) => i % 5 === 0)
        .map((l) => `${fmt(l.atMs / 1000, 1)}s:${l.limit}`)
        .join(' '),
    );
  const settled = limiter ? settleMs(limits, beforeMs) : undefined;
  const shed = limiter?.stats().priorities;
  return [
    `${critBefore} / ${critAfter}`,
    `${p99Cell(critical, setup, true)} / ${p99Cell(critical, setup, false)}`,
    `${goodBefore} / ${goodAfter}`,
    settled === undefined ? (limiter ? 'never' : '-') : `${fmt(settled / 1000, 1)} s`,
    limiter ? `${limits[limits.length - 1]?.limit}` : '-',
    shed ? `${fmt(shed.critical?.shed ?? 0)} / ${fmt(shed.normal?.shed ?? 0)}` : '-',
  ];
}
