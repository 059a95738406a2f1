/**
 * Gathers finished requests into windows of about one round trip (at least 10 requests, at least the
 * limit's worth) and hands the algorithm one summary per window: one slow request should not move
 * the limit, and a limit that moved on every request would swing far past the service's capacity.
 */
import type { LimitSample } from './limit-algorithm.js';

/** Fewest requests in a window: below it, an average latency is mostly noise. */
const MIN_SAMPLES = 10;

/** A window of samples. */
export interface SampleWindow {
  /** Adds a sample; answers the window's summary when it closes, else undefined. */
  add(sample: LimitSample, limit: number): LimitSample | undefined;
  /** Notes that a request was refused or queued for want of a place: the window's `limited`. */
  refused(): void;
}

/** Creates an empty window. */
export function createSampleWindow(): SampleWindow {
  let count = 0;
  let sumMs = 0;
  let maxInFlight = 0;
  let minRttMs = Number.POSITIVE_INFINITY;
  let dropped = false;
  let limited = false;
  return {
    add(sample, limit) {
      count++;
      sumMs += sample.rttMs;
      if (sample.inFlight > maxInFlight) maxInFlight = sample.inFlight;
      dropped ||= sample.dropped;
      // A dropped request may have failed fast (a refused connection): it says nothing of the no-load latency.
      if (!sample.dropped && sample.rttMs < minRttMs) minRttMs = sample.rttMs;
      if (count < Math.max(MIN_SAMPLES, limit)) return undefined;
      const fastest = minRttMs === Number.POSITIVE_INFINITY ? sumMs / count : minRttMs;
      const summary = {
        rttMs: sumMs / count,
        inFlight: maxInFlight,
        dropped,
        atMs: sample.atMs,
        minRttMs: fastest,
        limited,
      };
      count = 0;
      sumMs = 0;
      maxInFlight = 0;
      minRttMs = Number.POSITIVE_INFINITY;
      dropped = false;
      limited = false;
      return summary;
    },
    refused() {
      limited = true;
    },
  };
}
