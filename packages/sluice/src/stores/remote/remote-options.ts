/** The remote store's options checked (coded errors naming the option) and filled in with their defaults. */
import { SluiceError } from '../../core/errors.js';
import type { FetchLike } from './batcher.js';
import type { RemoteStoreOptions } from './remote-store.js';

/** Default, smallest and largest answer size per operation: see `maxResponseBytesPerCheck`. */
const DEFAULT_RESPONSE_BYTES_PER_CHECK = 4096;
const MIN_RESPONSE_BYTES_PER_CHECK = 1024;
const MAX_RESPONSE_BYTES_PER_CHECK = 2 ** 24;

/** The remote store's options, checked and with defaults. */
export interface ResolvedRemoteStoreOptions {
  /** The service's `/v1/check` URL. */
  readonly url: string;
  readonly timeoutMs: number;
  /** True with `clock: 'client'`: each operation carries the caller's time. */
  readonly clientClock: boolean;
  readonly maxBatch: number;
  readonly maxResponseBytesPerCheck: number;
  readonly fetch: FetchLike;
  /** Most keys of the local over-limit cache; undefined when it is off. */
  readonly cacheKeys: number | undefined;
}

/** Checks the options a remote store is created with. */
export function resolveRemoteStoreOptions(options: RemoteStoreOptions): ResolvedRemoteStoreOptions {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'createRemoteStore: expected an options object');
  }
  const url = checkUrl(options.url);
  const timeoutMs = options.timeoutMs ?? 1000;
  if (typeof timeoutMs !== 'number' || !(timeoutMs >= 1) || timeoutMs > 2 ** 31 - 1) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'timeoutMs: expected a number of ms ≥ 1', {
      option: 'timeoutMs',
    });
  }
  const clock = options.clock ?? 'server';
  if (clock !== 'server' && clock !== 'client') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `clock: expected 'server' or 'client', got ${String(clock)}`, {
      option: 'clock',
    });
  }
  const maxBatch = options.maxBatch ?? 100;
  if (!Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > 1000) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'maxBatch: expected a whole number from 1 to 1000', {
      option: 'maxBatch',
    });
  }
  const maxResponseBytesPerCheck = options.maxResponseBytesPerCheck ?? DEFAULT_RESPONSE_BYTES_PER_CHECK;
  if (
    !Number.isInteger(maxResponseBytesPerCheck) ||
    maxResponseBytesPerCheck < MIN_RESPONSE_BYTES_PER_CHECK ||
    maxResponseBytesPerCheck > MAX_RESPONSE_BYTES_PER_CHECK
  ) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `maxResponseBytesPerCheck: expected a whole number of bytes from ${MIN_RESPONSE_BYTES_PER_CHECK} to ${MAX_RESPONSE_BYTES_PER_CHECK}`,
      { option: 'maxResponseBytesPerCheck' },
    );
  }
  const fetchFn = options.fetch ?? (globalThis.fetch as FetchLike | undefined);
  if (typeof fetchFn !== 'function') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'fetch: this runtime has no global fetch; pass options.fetch', {
      option: 'fetch',
    });
  }
  for (const name of ['onError'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${name}: expected a function`, { option: name });
    }
  }
  const cacheOption = options.localCache ?? true;
  const cacheKeys = typeof cacheOption === 'object' ? (cacheOption.maxKeys ?? 10_000) : 10_000;
  if (!Number.isInteger(cacheKeys) || cacheKeys < 1) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'localCache.maxKeys: expected a whole number ≥ 1', {
      option: 'localCache.maxKeys',
    });
  }
  return {
    url,
    timeoutMs,
    clientClock: clock === 'client',
    maxBatch,
    maxResponseBytesPerCheck,
    fetch: fetchFn,
    cacheKeys: cacheOption === false ? undefined : cacheKeys,
  };
}

function checkUrl(value: unknown): string {
  let url: URL;
  try {
    url = new URL(value as string);
  } catch {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `url: expected the URL of sluice serve's HTTP port, e.g. 'http://127.0.0.1:8080', got ${String(value)}`,
      { option: 'url' },
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `url: expected http: or https:, got ${url.protocol}`, {
      option: 'url',
    });
  }
  if (!url.pathname.endsWith('/v1/check')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/check`;
  return url.href;
}
