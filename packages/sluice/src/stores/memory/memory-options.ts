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

/** Checks the memory store's options; every field filled in. */
export function resolveMemoryStoreOptions(options: MemoryStoreOptions): Required<MemoryStoreOptions> {
  const maxKeys = options.maxKeys ?? 1_000_000;
  if (!Number.isInteger(maxKeys) || maxKeys < 1 || maxKeys > 2 ** 30) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `maxKeys: ${String(maxKeys)} is not a whole number ≥ 1`, {
      option: 'maxKeys',
    });
  }
  const maxBytes = options.maxBytes ?? 128 * 1024 * 1024;
  if (!Number.isInteger(maxBytes) || maxBytes < 64 * 1024) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `maxBytes: ${String(maxBytes)} is not a whole number ≥ 65536`, {
      option: 'maxBytes',
    });
  }
  const sweepIntervalMs = options.sweepIntervalMs ?? 10_000;
  if (!Number.isInteger(sweepIntervalMs) || sweepIntervalMs < 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'sweepIntervalMs: must be a whole number of ms ≥ 0', {
      option: 'sweepIntervalMs',
    });
  }
  return { maxKeys, maxBytes, sweepIntervalMs };
}
