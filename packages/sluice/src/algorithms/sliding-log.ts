/**
 * The sliding log algorithm: every admitted request kept as a (time, units) pair, so no window of one period ever holds
 * more than the limit, at O(limit) memory per key; the one algorithm whose state is not three numbers.
 */
import { costExceedsCapacity, type Decision } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
import type { Algorithm } from './types.js';

/**
 * The log of one key: the admitted requests as (timestamp, units) pairs, oldest first, stored flat
 * in `entries` from index `head` on. Only admitted requests are logged and a request of cost c is one
 * pair, so a key holds at most `limit` pairs however hard it is hit.
 */
export class SlidingLogState {
  entries: number[] = [];
  head = 0;
  /** Units in entries[head..]. */
  total = 0;
}

/** Drops the entries logged at or before `now - period`, i.e. outside the window (now − period, now]. */
function dropExpired(log: SlidingLogState, now: number, periodMs: number): void {
  const { entries } = log;
  let units = 0;
  let i = log.head;
  while (i < entries.length && (entries[i] as number) <= now - periodMs) {
    units += entries[i + 1] as number;
    i += 2;
  }
  drop(log, i, units);
}

function resetOf(log: SlidingLogState, now: number, p: ResolvedPolicy, count: number): number {
  return count > 0 ? Math.ceil((log.entries[log.entries.length - 2] as number) + p.periodMs - now) : 0;
}

/** Sliding log: exact — never more than `limit` units in any window of one period — at O(limit) memory. */
export const slidingLog: Algorithm<SlidingLogState> = {
  name: 'sliding-log',

  check(log, _o, now, p, cost, commit): Decision {
    // The expired prefix, found in place (dropExpired() would drop it even for a peek), and a rejection
    // decided off this path: the step a hot key takes on every check stays short.
    const { entries } = log;
    const edge = now - p.periodMs;
    let expired = 0;
    let index = log.head;
    while (index < entries.length && (entries[index] as number) <= edge) {
      expired += entries[index + 1] as number;
      index += 2;
    }
    // The log's numbers live in a double array: Math.floor (an identity on these whole numbers) hands V8
    // a small integer, stored in the decision as it is rather than as a boxed double.
    const count = Math.floor(log.total - expired);
    // cost > capacity (= limit) implies this test; rejected() tells the two apart.
    if (count + cost > p.limit) return rejected(log, index, count, now, p, cost);
    const taken = commit ? cost : 0;
    if (taken > 0) {
      drop(log, index, expired);
      append(log, now, taken);
    }
    const after = count + taken;
    return {
      allowed: true,
      limit: p.limit,
      remaining: p.limit - after,
      resetMs: resetOf(log, now, p, after),
      retryAfterMs: 0,
    };
  },

  charge(log, _o, now, p, cost) {
    // Logged like an admission, past the limit: the window refuses until enough entries have left it.
    // At most one limit of debt (2 × limit units in the log): see MAX_DEBT.
    dropExpired(log, now, p.periodMs);
    const taken = Math.min(cost, Math.max(0, 2 * p.limit - log.total));
    if (taken > 0) append(log, now, taken);
    return slidingLog.check(log, 0, now, p, 0, false);
  },

  refund(log, _o, now, p, cost, takenAt = now) {
    dropExpired(log, now, p.periodMs);
    // Give back the newest units logged at or before takenAt: the caller's own. Entries after it are other
    // requests', admitted since, and stay.
    const { entries } = log;
    let end = entries.length;
    while (end > log.head && (entries[end - 2] as number) > takenAt) end -= 2;
    let left = cost;
    let from = end;
    while (left > 0 && from > log.head) {
      const n = entries[from - 1] as number;
      if (n > left) {
        entries[from - 1] = n - left;
        log.total -= left;
        break;
      }
      left -= n;
      log.total -= n;
      from -= 2;
    }
    entries.splice(from, end - from);
  },

  expiresAt(log, _o, p) {
    return log.entries.length > log.head ? (log.entries[log.entries.length - 2] as number) + p.periodMs : 0;
  },
};

/** The rejection of a request that does not fit (`index`: the first entry still in the window). */
function rejected(
  log: SlidingLogState,
  index: number,
  count: number,
  now: number,
  p: ResolvedPolicy,
  cost: number,
): Decision {
  if (cost > p.capacity) {
    return costExceedsCapacity(p.limit, Math.max(0, p.limit - count), resetOf(log, now, p, count));
  }
  // Wait until enough of the oldest entries leave the window.
  let freed = 0;
  let i = index;
  while (count - freed + cost > p.limit) {
    freed += log.entries[i + 1] as number;
    i += 2;
  }
  return {
    allowed: false,
    limit: p.limit,
    remaining: Math.max(0, p.limit - count),
    resetMs: resetOf(log, now, p, count),
    retryAfterMs: Math.ceil((log.entries[i - 2] as number) + p.periodMs - now),
  };
}

function drop(log: SlidingLogState, index: number, units: number): void {
  log.head = index;
  log.total -= units;
  // Compact once the dead prefix is as long as the live part, so memory stays O(limit).
  if (log.head > 0 && log.head * 2 >= log.entries.length) {
    log.entries.splice(0, log.head);
    log.head = 0;
  }
}

function append(log: SlidingLogState, now: number, units: number): void {
  const { entries } = log;
  const last = entries.length - 2;
  if (last >= log.head && entries[last] === now) entries[last + 1] = (entries[last + 1] as number) + units;
  // A new log gets an array of exactly one pair: most keys never log a second request.
  else if (entries.length === 0) log.entries = [now, units];
  else entries.push(now, units);
  log.total += units;
}
