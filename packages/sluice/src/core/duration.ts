/**
 * Durations as people write them (`'500ms'`, `'1h30m'`, `'1 minute'`) or as milliseconds, parsed once at the edges:
 * everything inside sluice works in whole milliseconds.
 */
import { SluiceError } from './errors.js';

/**
 * A duration: a number of milliseconds, or a string such as `'500ms'`, `'10s'`, `'1min'`, `'1h30m'`,
 * `'1 minute'`, `'1d'`.
 */
export type Duration = number | string;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * Unit spellings, short and long: what users bring from `ms` (express-rate-limit, @fastify/rate-limit's
 * `timeWindow: '1 minute'`), Go (`1h30m`) and Envoy configs. Months and years are left out on purpose:
 * their length varies, and a rate limit should not.
 */
const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  msec: 1,
  msecs: 1,
  millisecond: 1,
  milliseconds: 1,
  s: SECOND,
  sec: SECOND,
  secs: SECOND,
  second: SECOND,
  seconds: SECOND,
  m: MINUTE,
  min: MINUTE,
  mins: MINUTE,
  minute: MINUTE,
  minutes: MINUTE,
  h: HOUR,
  hr: HOUR,
  hrs: HOUR,
  hour: HOUR,
  hours: HOUR,
  d: DAY,
  day: DAY,
  days: DAY,
  w: 7 * DAY,
  week: 7 * DAY,
  weeks: 7 * DAY,
};

/** One `<number><unit>` part; a duration is one or more of them (`1h30m`, `1 hour 30 minutes`). */
const PART = /(\d+(?:\.\d+)?)\s*([a-z]+)\s*/y;
/** Longest duration string accepted: anything longer is not a duration someone typed. */
const MAX_TEXT = 64;

/**
 * Parses a duration into whole milliseconds. Strings are parsed once, at the edges (options, YAML);
 * everything inside sluice works in integer milliseconds. A string is one or more `<number><unit>`
 * parts, largest first or not, with optional spaces: `'500ms'`, `'1.5s'`, `'1min'`, `'1h30m'`,
 * `'2 hours'`, `'1 minute 30 seconds'`. Units: ms, s/sec/second(s), m/min/minute(s), h/hr/hour(s),
 * d/day(s), w/week(s), case-insensitive.
 *
 * @param option - the option name to put in the error message.
 * @throws SluiceError `ERR_SLUICE_INVALID_DURATION` when the value is not a finite, non-negative
 *   whole number of milliseconds or such a string.
 * @example parseDuration('1h30m') // 5400000
 */
export function parseDuration(value: unknown, option = 'duration'): number {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value >= 0) return value;
    throw invalid(option, `${value} is not a whole, non-negative number of milliseconds`);
  }
  if (typeof value === 'string') {
    const ms = parseText(value);
    if (ms === undefined) {
      throw invalid(
        option,
        `'${value.length > MAX_TEXT ? `${value.slice(0, MAX_TEXT)}…` : value}' is not a duration; use a number of ms or e.g. '500ms', '10s', '1min', '1h30m', '1d'`,
      );
    }
    if (Number.isSafeInteger(ms)) return ms;
    throw invalid(option, `'${value}' is not a whole number of milliseconds`);
  }
  throw invalid(option, `expected a number of ms or a duration string, got ${typeof value}`);
}

/** The milliseconds of a duration string (maybe fractional), or undefined when it is not one. */
function parseText(value: string): number | undefined {
  const text = value.trim().toLowerCase();
  if (text === '' || text.length > MAX_TEXT) return undefined;
  PART.lastIndex = 0;
  let total = 0;
  while (PART.lastIndex < text.length) {
    const match = PART.exec(text);
    if (match === null) return undefined;
    // Own units only: 'constructor' or 'toString' is an unknown unit, not Object.prototype's member.
    const name = match[2] as string;
    const unit = Object.hasOwn(UNIT_MS, name) ? UNIT_MS[name] : undefined;
    if (unit === undefined) return undefined;
    total += Number(match[1]) * unit;
  }
  // Decimal fractions are not exact in binary ('1.1s' is 1100.0000000000002 ms): snap what is a
  // whole number up to rounding, and leave a real fraction ('1.0001ms') for the caller to refuse.
  const whole = Math.round(total);
  return Math.abs(total - whole) < 1e-6 ? whole : total;
}

function invalid(option: string, why: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_DURATION', `${option}: ${why}`, { option });
}
