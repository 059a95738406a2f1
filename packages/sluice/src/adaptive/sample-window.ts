/**
 * Gathers finished requests into windows of about one round trip (at least 10 requests, at least the
 * limit's worth) and hands the algorithm one summary per window: one slow request should not move
 * the limit, and a limit that moved on every request would swing far past the service's capacity.
 */
import type { LimitSample } from './limit-algorithm.js';

/** Fewest requests in a window: below it, an average latency is mostly noise. */
const MIN_SAMPLES = 10;

/**
 * The window's low latency is the one a tenth of its requests beat: low enough to show the no-load
 * latency while part of the window queued, and, in a window of 10 or more, never set by a single
 * request (a health check answered at once next to a route that takes 20 ms).
 */
const LOW_PERCENTILE = 0.1;

/** A window of samples. */
export interface SampleWindow {
  /** Adds a sample; answers the window's summary when it closes, else undefined. */
  add(sample: LimitSample, limit: number): LimitSample | undefined;
  /** Notes that a request was refused or queued for want of a place: the window's `limited`. */
  refused(): void;
}

/** The low percentile of `rtts` (sorted in place); undefined when empty. */
function lowPercentile(rtts: number[]): number | undefined {
  rtts.sort((a, b) => a - b);
  return rtts[Math.floor(rtts.length * LOW_PERCENTILE)];
}

/** Creates an empty window. */
export function createSampleWindow(): SampleWindow {
  let count = 0;
  let sumMs = 0;
  let maxInFlight = 0;
  // Latencies of the requests not dropped: a dropped one may have failed fast (a refused connection)
  // and says nothing of the no-load latency.
  const kept: number[] = [];
  let dropped = false;
  let limited = false;
  return {
    add(sample, limit) {
      count++;
      sumMs += sample.rttMs;
      if (sample.inFlight > maxInFlight) maxInFlight = sample.inFlight;
      dropped ||= sample.dropped;
      if (!sample.dropped) kept.push(sample.rttMs);
      if (count < Math.max(MIN_SAMPLES, limit)) return undefined;
      const summary = {
        rttMs: sumMs / count,
        inFlight: maxInFlight,
        dropped,
        atMs: sample.atMs,
        lowRttMs: lowPercentile(kept) ?? sumMs / count,
        limited,
      };
      count = 0;
      sumMs = 0;
      maxInFlight = 0;
      kept.length = 0;
      dropped = false;
      limited = false;
      return summary;
    },
    refused() {
      limited = true;
    },
  };
}
