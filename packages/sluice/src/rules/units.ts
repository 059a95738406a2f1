/**
 * envoy ratelimit's time units (second to year) and how sluice maps them to and from periods: a month is 30 days, a
 * year 365, and windows are aligned to the epoch.
 */
import type { Unit } from './types.js';

/** The units, shortest first. */
export const UNITS: readonly Unit[] = ['SECOND', 'MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR'];

/**
 * Milliseconds per unit, as envoy ratelimit divides time: a month is 30 days and a year 365 days, and
 * windows are aligned to the Unix epoch (`floor(now / unit)`), not to calendar months or years.
 */
export const UNIT_MS: Readonly<Record<Unit, number>> = {
  SECOND: 1000,
  MINUTE: 60_000,
  HOUR: 3_600_000,
  DAY: 86_400_000,
  WEEK: 7 * 86_400_000,
  MONTH: 30 * 86_400_000,
  YEAR: 365 * 86_400_000,
};

/** The unit named `name` in any case, or undefined. */
export function parseUnit(name: unknown): Unit | undefined {
  if (typeof name !== 'string') return undefined;
  const upper = name.toUpperCase();
  return (UNITS as readonly string[]).includes(upper) ? (upper as Unit) : undefined;
}

/** The unit that is exactly `periodMs` long, if one is. */
export function unitOfPeriod(periodMs: number): Unit | undefined {
  return UNITS.find((u) => UNIT_MS[u] === periodMs);
}

/**
 * `limit` per `periodMs` expressed per unit, for Envoy's proto which knows only units: the period's own
 * unit when it is one; else the rate in the largest unit not longer than the period, rounded down —
 * moving to longer units while that rounds to 0, since a 0 would read as "blocked".
 */
export function asUnitRate(limit: number, periodMs: number): { requestsPerUnit: number; unit: Unit } {
  const exact = unitOfPeriod(periodMs);
  if (exact) return { requestsPerUnit: limit, unit: exact };
  if (limit === 0) {
    return { requestsPerUnit: 0, unit: UNITS.find((u) => UNIT_MS[u] >= periodMs) ?? 'YEAR' };
  }
  // Start from the largest unit not longer than the period, and grow the unit until the rate is ≥ 1.
  let start = 0;
  for (const [i, u] of UNITS.entries()) if (UNIT_MS[u] <= periodMs) start = i;
  for (let i = start; i < UNITS.length; i++) {
    const unit = UNITS[i] as Unit;
    const rate = Math.floor((limit * UNIT_MS[unit]) / periodMs);
    if (rate >= 1) return { requestsPerUnit: rate, unit };
  }
  return { requestsPerUnit: 1, unit: 'YEAR' };
}
