/** One algorithm's run cut into equal time bins, for charts. */
import type { AlgorithmRun, SimulationResult } from './engine.js';
import { releasedEvents } from './engine.js';
import { createWindowCounter } from './window-counter.js';

/** One algorithm's run cut into equal time bins, ready to draw. */
export interface RunSeries {
  /** Start of the first bin (ms, same origin as the trace): the start of the first request's period. */
  readonly startMs: number;
  readonly binMs: number;
  /** Requests admitted in each bin. */
  readonly admitted: readonly number[];
  /** Requests rejected in each bin. */
  readonly rejected: readonly number[];
  /** The most units admitted in the trailing period `(t - period, t]` for any `t` in each bin. */
  readonly trailing: readonly number[];
  /** Leaky bucket: the same, counting requests when they leave the queue. */
  readonly shapedTrailing?: readonly number[];
}

/** At most this many bins per chart: beyond it bars get thinner than a pixel or two. */
export const MAX_BINS = 240;

/**
 * Bins a run for charting. The bin is a tenth of the period, widened in whole tenths when the trace is
 * long, so a window boundary always falls on a bin edge.
 */
export function seriesOf(result: SimulationResult, run: AlgorithmRun): RunSeries {
  const { trace, periodMs } = result;
  const events = trace.events;
  const first = events[0]?.atMs ?? 0;
  const last = events[events.length - 1]?.atMs ?? 0;
  const released = run.algorithm === 'leaky-bucket' ? releasedEvents(trace, run.allowed, run.delaysMs) : undefined;
  const lastRelease = released?.[released.length - 1]?.atMs ?? last;
  const startMs = Math.floor(first / periodMs) * periodMs;
  const endMs = Math.max(startMs + periodMs, Math.ceil((Math.max(last, lastRelease) + 1) / periodMs) * periodMs);
  const tenth = periodMs / 10;
  const binMs = tenth * Math.max(1, Math.ceil((endMs - startMs) / tenth / MAX_BINS));
  const bins = Math.max(1, Math.ceil((endMs - startMs) / binMs));
  const admitted = new Array<number>(bins).fill(0);
  const rejected = new Array<number>(bins).fill(0);
  const admittedEvents: { atMs: number; cost: number }[] = [];
  events.forEach((e, i) => {
    const b = Math.min(bins - 1, Math.floor((e.atMs - startMs) / binMs));
    if (run.allowed[i] === 1) {
      admitted[b] = (admitted[b] as number) + 1;
      admittedEvents.push(e);
    } else {
      rejected[b] = (rejected[b] as number) + 1;
    }
  });
  const series: RunSeries = {
    startMs,
    binMs,
    admitted,
    rejected,
    trailing: trailingMax(admittedEvents, startMs, binMs, bins, periodMs),
  };
  return released === undefined
    ? series
    : { ...series, shapedTrailing: trailingMax(released, startMs, binMs, bins, periodMs) };
}

/** Per bin, the largest count of the trailing period seen at an event or at the bin's end. */
function trailingMax(
  events: readonly { atMs: number; cost: number }[],
  startMs: number,
  binMs: number,
  bins: number,
  periodMs: number,
): number[] {
  const counter = createWindowCounter(periodMs);
  const out = new Array<number>(bins).fill(0);
  let j = 0;
  for (let b = 0; b < bins; b++) {
    const endMs = startMs + (b + 1) * binMs;
    let max = 0;
    for (let e = events[j]; e !== undefined && (e.atMs < endMs || b === bins - 1); e = events[++j]) {
      counter.advance(e.atMs);
      counter.add(e.atMs, e.cost);
      max = Math.max(max, counter.units());
    }
    counter.advance(endMs);
    out[b] = Math.max(max, counter.units());
  }
  return out;
}
