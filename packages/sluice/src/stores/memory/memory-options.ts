/** The memory store's options checked (coded errors naming the option) and filled in with their defaults. */
import { SluiceError } from '../../core/errors.js';
import type { MemoryStoreOptions } from './memory-store.js';

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
