/** Units counted in the sliding window `(now - period, now]`, as time moves forward. */
export interface WindowCounter {
  /** Moves the window's end to `nowMs` (never backwards), dropping what fell out. */
  advance(nowMs: number): void;
  /** Counts `units` at `atMs` (the window's current end). */
  add(atMs: number, units: number): void;
  /** Units in the window now. */
  units(): number;
}

/**
 * Creates an exact sliding-window counter: a queue of (time, units), the same window the sliding-log
 * algorithm enforces. Used to measure peaks and to check the approximate algorithms against it.
 */
export function createWindowCounter(periodMs: number): WindowCounter {
  const times: number[] = [];
  const amounts: number[] = [];
  let head = 0;
  let sum = 0;
  return {
    advance(nowMs) {
      while (head < times.length && (times[head] as number) <= nowMs - periodMs) {
        sum -= amounts[head] as number;
        head++;
      }
      // Compact now and then so memory follows the window, not the whole trace.
      if (head > 1024 && head * 2 > times.length) {
        times.splice(0, head);
        amounts.splice(0, head);
        head = 0;
      }
    },
    add(atMs, units) {
      if (units === 0) return;
      times.push(atMs);
      amounts.push(units);
      sum += units;
    },
    units: () => sum,
  };
}
