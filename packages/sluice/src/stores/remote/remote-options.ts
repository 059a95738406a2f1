/** The remote store's options checked (coded errors naming the option) and filled in with their defaults. */
import { SluiceError } from '../../core/errors.js';
import { localCacheKeys } from '../redis/local-cache.js';
import type { FetchLike } from './post-batch.js';

/** Options of {@link createRemoteStore}. */
export interface RemoteStoreOptions {
  /**
   * Where `sluice serve` answers HTTP, e.g. `'http://127.0.0.1:8080'` (its `/v1/check` is appended),
   * or the full URL of `/v1/check` behind a proxy.
   */
  url: string | URL;
  /**
   * Longest wait for the service, in ms; past it the call fails with ERR_SLUICE_STORE_TIMEOUT and the
   * limiter's `fail` policy answers. Longer than the Redis store's 50 ms because the service is usually
   * across a network, often from an edge region: a first request also pays for the TLS handshake.
   * @default 1000
   */
  timeoutMs?: number;
  /**
   * Whose clock decides: `'server'` uses the service's clock (instances with skewed clocks agree);
   * `'client'` sends the `nowMs` the limiter passes, for tests with a manual clock — the service must
   * run with `--client-clock`. @default 'server'
   */
  clock?: 'server' | 'client';
  /** Extra request headers, e.g. `authorization` for a proxy in front of the service. */
  headers?: Readonly<Record<string, string>>;
  /** The fetch to use (a Cloudflare service binding's `fetch`, or a test's). @default globalThis.fetch */
  fetch?: FetchLike;
  /**
   * Send the operations that arrive together (callers resumed by the same reply, several limits of one
   * request) as one HTTP request. @default true
   */
  batch?: boolean;
  /** Most operations in one HTTP request (the service takes at most 1000). @default 100 */
  maxBatch?: number;
  /**
   * Most bytes of an answer per operation in the request (a batch of 100 may answer with 100 times
   * this). A longer answer is cut off as it arrives, the connection dropped, and the operations fail as
   * a store failure (`ERR_SLUICE_STORE_UNAVAILABLE`): the limiter's `fail` policy answers. A result is
   * about 150 bytes, so this only matters against a broken or hostile server or proxy, which could
   * otherwise stream an endless body into this process (edge runtimes have 128 MB). From 1024 to 2^24.
   * @default 4096
   */
  maxResponseBytesPerCheck?: number;
  /** Called with store failures (timeouts, HTTP errors, a refused connection), once per outage. */
  onError?: (error: SluiceError) => void;
  /**
   * Answer keys known to be over their limit in-process, without a request, until they can pass again
   * (the Redis store's local cache): a flood on one key does not become load on the service.
   * `{ maxKeys }` bounds it. @default true (10 000 keys)
   */
  localCache?: boolean | { maxKeys?: number };
}

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
  const cacheKeys = localCacheKeys(options.localCache);
  return {
    url,
    timeoutMs,
    clientClock: clock === 'client',
    maxBatch,
    maxResponseBytesPerCheck,
    fetch: fetchFn,
    cacheKeys,
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
