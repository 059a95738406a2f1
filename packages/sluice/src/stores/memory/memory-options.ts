/** The memory store's options checked (coded errors naming the option) and filled in with their defaults. */
import { SluiceError } from '../../core/errors.js';

/** Options of the memory store. */
export interface MemoryStoreOptions {
  /**
   * Most keys kept at once; past it one is forgotten, in the order that forgets least: a key whose
   * state equals a fresh one, then the least used of a few least recently used, and a key at its limit
   * or blocked only when nothing else is left. @default 1_000_000
   */
  maxKeys?: number;
  /**
   * Most bytes the store's state may take (keys, sliding logs, each policy's table, blocks, leases), estimated
   * per key as measured in docs/limiter.md; past it keys are forgotten in the same order. @default 128 MiB
   */
  maxBytes?: number;
  /** How often an unref'd timer frees expired keys, in ms; 0 turns the sweep off. @default 10_000 */
  sweepIntervalMs?: number;
}

/** Each option's default and the whole numbers it takes. */
const BOUNDS = {
  maxKeys: { fallback: 1_000_000, min: 1, max: 2 ** 30 },
  maxBytes: { fallback: 128 * 1024 * 1024, min: 64 * 1024, max: Number.POSITIVE_INFINITY },
  sweepIntervalMs: { fallback: 10_000, min: 0, max: Number.POSITIVE_INFINITY },
} as const;

/** Checks the memory store's options; every field filled in. */
export function resolveMemoryStoreOptions(options: MemoryStoreOptions): Required<MemoryStoreOptions> {
  return {
    maxKeys: wholeNumber(options, 'maxKeys'),
    maxBytes: wholeNumber(options, 'maxBytes'),
    sweepIntervalMs: wholeNumber(options, 'sweepIntervalMs'),
  };
}

function wholeNumber(options: MemoryStoreOptions, option: keyof MemoryStoreOptions): number {
  const { fallback, min, max } = BOUNDS[option];
  const value = options[option] ?? fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${option}: ${String(value)} is not a whole number ≥ ${min}`, {
      option,
    });
  }
  return value;
}
