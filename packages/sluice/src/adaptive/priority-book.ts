/**
 * The book of who holds how much of the limit: per-priority in-flight counts, guaranteed shares, and
 * the rule that says whether one more request of a priority fits. Plain data and functions over it:
 * the rule runs on every request.
 */

import { SluiceError } from '../core/errors.js';
import type { PriorityFigures } from './decision.js';

/** How long a priority counts as wanting its share after it last asked for a place. */
const DEMAND_WINDOW_MS = 1000;

/** Per-priority counters, most important first. */
export interface PriorityBook {
  readonly names: readonly string[];
  readonly shares: readonly number[];
  readonly inFlight: number[];
  total: number;
  /** Time of each priority's last request, for "has demand". */
  readonly lastDemandMs: number[];
  /** Each priority's waiting requests (the queue's lines): a waiter is demand, and is not passed by a borrower. */
  readonly waiting: readonly { readonly length: number }[];
  /** Requests admitted and refused (shed) since the limiter was created, for `stats()`. */
  readonly admitted: number[];
  readonly shed: number[];
}

/** Creates an empty book. */
export function createPriorityBook(
  names: readonly string[],
  shares: readonly number[],
  waiting: PriorityBook['waiting'],
): PriorityBook {
  const zeros = () => names.map(() => 0);
  return {
    names,
    shares,
    inFlight: zeros(),
    total: 0,
    lastDemandMs: names.map(() => Number.NEGATIVE_INFINITY),
    waiting,
    admitted: zeros(),
    shed: zeros(),
  };
}

/** The places guaranteed to priority `i` under `limit` (whole places, rounded down). */
const guaranteed = (book: PriorityBook, i: number, limit: number) => Math.floor((book.shares[i] as number) * limit);

const queued = (book: PriorityBook, i: number) => (book.waiting[i] as { length: number }).length;

function hasDemand(book: PriorityBook, i: number, nowMs: number): boolean {
  return (
    (book.inFlight[i] as number) > 0 ||
    queued(book, i) > 0 ||
    nowMs - (book.lastDemandMs[i] as number) < DEMAND_WINDOW_MS
  );
}

/** Whether requests of priority `i` or more important ones are waiting in the queue. */
function waitingAhead(book: PriorityBook, i: number): boolean {
  for (let q = 0; q <= i; q++) if (queued(book, q) > 0) return true;
  return false;
}

/**
 * Whether one more request of priority `i` fits: always within its own guarantee (while the limit
 * has room), and beyond it only into places no other priority with demand is guaranteed. So a
 * priority borrows what idle ones leave, and a borrower is the first to be refused once they return.
 * An `arriving` request (not a waiter being served) borrows only when no waiter as important or more
 * would be passed.
 */
export function fits(book: PriorityBook, i: number, limit: number, nowMs: number, arriving = false): boolean {
  if (book.total >= limit) return false;
  if ((book.inFlight[i] as number) < guaranteed(book, i, limit)) return true;
  if (arriving && waitingAhead(book, i)) return false;
  let reserved = 0;
  for (let q = 0; q < book.names.length; q++)
    if (q !== i && hasDemand(book, q, nowMs))
      reserved += Math.max(0, guaranteed(book, q, limit) - (book.inFlight[q] as number));
  return book.total + 1 + reserved <= limit;
}

/**
 * When the next priority whose demand is only its recent request (nothing held, nothing waiting) stops
 * having demand, after `nowMs`; undefined when none will. Its reserved places free up then, without
 * any release to notice it.
 */
export function nextLapseMs(book: PriorityBook, nowMs: number): number | undefined {
  let next: number | undefined;
  for (let i = 0; i < book.names.length; i++) {
    if ((book.inFlight[i] as number) > 0 || queued(book, i) > 0) continue;
    const atMs = (book.lastDemandMs[i] as number) + DEMAND_WINDOW_MS;
    if (atMs > nowMs && (next === undefined || atMs < next)) next = atMs;
  }
  return next;
}

/**
 * Per-priority figures for `stats()`. Built from entries, which become own properties whatever the
 * name: assigning `figures['__proto__']` would set the object's prototype and the priority would vanish.
 */
export function priorityFigures(book: PriorityBook, limit: number): Record<string, PriorityFigures> {
  return Object.fromEntries(
    book.names.map((name, i) => [
      name,
      {
        share: book.shares[i] as number,
        guaranteed: guaranteed(book, i, limit),
        inFlight: book.inFlight[i] as number,
        queued: queued(book, i),
        admitted: book.admitted[i] as number,
        shed: book.shed[i] as number,
      },
    ]),
  );
}

/** The index of `priority` (the least important when undefined); an unknown name is misuse. */
export function priorityIndex(book: PriorityBook, priority: string | undefined): number {
  const i = priority === undefined ? book.names.length - 1 : book.names.indexOf(priority);
  if (i < 0)
    throw new SluiceError(
      'ERR_SLUICE_ADAPTIVE_UNKNOWN_PRIORITY',
      `priority '${String(priority)}' is not one of ${book.names.join(', ')}; add it to priorities or pass a known one`,
      { option: 'priority' },
    );
  return i;
}
