import { SluiceError } from './errors.js';

/** A duration: a number of milliseconds, or a string such as `'500ms'`, `'10s'`, `'5m'`, `'1h'`, `'1d'`. */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

const DURATION_PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)$/;

/**
 * Parses a duration into whole milliseconds. Strings are parsed once, at the edges (options, YAML);
 * everything inside sluice works in integer milliseconds.
 *
 * @param option - the option name to put in the error message.
 * @throws SluiceError `ERR_SLUICE_INVALID_DURATION` when the value is not a finite, non-negative
 *   whole number of milliseconds or a `<number><unit>` string.
 * @example parseDuration('1.5s') // 1500
 */
export function parseDuration(value: unknown, option = 'duration'): number {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value >= 0) return value;
    throw invalid(option, `${value} is not a whole, non-negative number of milliseconds`);
  }
  if (typeof value === 'string') {
    const match = DURATION_PATTERN.exec(value.trim());
    if (match) {
      const ms = Number(match[1]) * (UNIT_MS[match[2] as string] as number);
      if (Number.isSafeInteger(ms)) return ms;
      throw invalid(option, `'${value}' is not a whole number of milliseconds`);
    }
    throw invalid(option, `'${value}' is not a duration; use a number of ms or e.g. '500ms', '10s', '5m', '1h', '1d'`);
  }
  throw invalid(option, `expected a number of ms or a duration string, got ${typeof value}`);
}

function invalid(option: string, why: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_DURATION', `${option}: ${why}`, { option });
}
