/**
 * Keys as a limit counts them: what a key function may return (a string or a number), and what a missing key means
 * (`missingKey`: the client's address, no limit, or a 400).
 */
import { optionError } from '../core/errors.js';

/**
 * What a missing key (a key function that returned `null`, `undefined` or `''`) means:
 * - `'ip'` — count the request under the client's address instead (the default: a request is never
 *   unlimited by accident, e.g. a client that simply leaves out its API key);
 * - `'skip'` — the limit does not apply to that request (a warning is given once per process the
 *   first time a request passes with no limit at all this way);
 * - `'reject'` — answer 400 (the request lacks what identifies it; the seed design's answer to a
 *   missing identifying header).
 */
export type MissingKey = 'ip' | 'skip' | 'reject';

export const MISSING_KEY_VALUES: readonly MissingKey[] = ['ip', 'skip', 'reject'];

/** A key as a limit counts it, or undefined when there is none. Numbers (user ids) are keys. */
export function keyText(value: unknown, option: string): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (value === null || value === undefined) return undefined;
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint') return String(value);
  throw optionError(
    option,
    `the key function returned ${describe(value)}; return a string or a number (or null when the request has none)`,
    'ERR_SLUICE_INVALID_KEY',
  );
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return 'an array';
  return `a value of type ${typeof value}`;
}

/** Validates a `missingKey` option. */
export function checkMissingKey(value: unknown, option: string): MissingKey | undefined {
  if (value === undefined) return undefined;
  if (!(MISSING_KEY_VALUES as readonly unknown[]).includes(value)) {
    throw optionError(
      option,
      `${JSON.stringify(value)} is not one of ${MISSING_KEY_VALUES.map((v) => `'${v}'`).join(', ')}`,
    );
  }
  return value as MissingKey;
}
