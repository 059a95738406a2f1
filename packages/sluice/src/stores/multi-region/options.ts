/** The multi-region store's options, validated once into their resolved form. */
import { type Clock, systemClock } from '../../core/clock.js';
import { SluiceError } from '../../core/errors.js';
import { createTransport, type RedisClientLike, type RedisTransport } from '../redis/client.js';
import { validatePrefix } from '../redis/keys.js';
import type { DecidedEvent } from './escrow.js';

/** Options of {@link createMultiRegionStore}. */
export interface MultiRegionStoreOptions {
  /** The region this process runs in: a key of `regions`. */
  region: string;
  /**
   * Every region's Redis (standalone, Sentinel or Cluster client, as for `sluice/redis`), by region
   * name — this one's included. Decisions use only `regions[region]`; the sync loop writes to the others.
   */
  regions: Readonly<Record<string, RedisClientLike>>;
  /**
   * `'eventual'`: every region counts in its own G-counter and the counts are replicated, so a
   * region admits against what it has heard of the others — fast, over by at most a stated bound
   * (`store.bound(policy)`); fixed-window and sliding-window only. `'escrow'`: every region holds a
   * share of the limit and decides within it — never over the limit, any algorithm, at the price of
   * under-admission while a share moves to where the traffic is.
   */
  mode: 'eventual' | 'escrow';
  /** How often changed counts (or shares) are sent to the other regions, in ms. @default 1000 */
  syncIntervalMs?: number;
  /** Prepended to every key; must not contain `{` or `}`. @default 'sluice:mr:' */
  prefix?: string;
  /** Longest wait for this region's Redis, in ms (a decision). @default 50 */
  timeoutMs?: number;
  /** Longest wait for another region's Redis, in ms (a sync push). @default 2000 */
  peerTimeoutMs?: number;
  /** Most keys waiting to be sent to one peer (during a partition); the oldest go first. @default 100000 */
  maxPendingKeys?: number;
  /**
   * Most bytes a peer region's Redis may send for one reply (a sync reply is under a few KB). Past it
   * the connection is dropped before more is buffered, and the sync fails with
   * `ERR_SLUICE_MULTI_REGION_REPLY_TOO_LARGE` and retries with backoff. Applies to ioredis and iovalkey
   * `Redis` peer clients (reply-bound.ts); from 1024 to 2^30. @default 1048576 (1 MiB)
   */
  maxPeerReplyBytes?: number;
  /** The clock of the sync loop's bookkeeping (lag, rebalancing). @default systemClock */
  clock?: Clock;
  /** Store failures: this region's Redis (as the Redis store reports them) and failed syncs. */
  onError?: (error: SluiceError) => void;
  /**
   * The most two application servers' clocks may disagree, in ms (decisions are stamped with the
   * caller's clock). Escrow mode waits this much longer before a region uses units it was given.
   * @default 100
   */
  maxClockSkewMs?: number;
  /**
   * How long counters and states outlive their window, in ms: a sync that arrives later than this
   * after a window ended finds nothing to add to (it no longer matters). @default max(5000, 3 × syncIntervalMs)
   */
  graceMs?: number;
  /** Hears of every decision, with the instant and (escrow) the share it was taken at: for metrics and tests. */
  onDecided?: (event: DecidedEvent) => void;
  /** Run the sync loop on a timer; false = only when `store.sync()` is called (tests, tools). @default true */
  autoSync?: boolean;
  /**
   * A second connection to this region's Redis, for the sync loop's own reads and credits, so that a
   * large sync batch never queues in front of decisions on the decisions' connection. By default the
   * store opens one with `regions[region].duplicate()` (ioredis, iovalkey) and closes it with the
   * store; a client given here is the caller's to close. Other clients without `duplicate()`
   * (node-redis, valkey-glide) share the decisions' connection unless one is given.
   */
  syncClient?: RedisClientLike;
}

/** Validated options. */
export interface ResolvedMultiRegionOptions {
  readonly region: string;
  readonly regionNames: readonly string[];
  readonly local: RedisTransport;
  /**
   * The sync loop's connection to this region's Redis (see `syncClient`): the caller's, or `'duplicate'`
   * (the store opens one with the decisions' client's `duplicate()` when it first syncs, and closes
   * it), or undefined: the sync shares the decisions' connection.
   */
  readonly localSync: RedisTransport | 'duplicate' | undefined;
  readonly peers: readonly { region: string; transport: RedisTransport }[];
  readonly mode: 'eventual' | 'escrow';
  readonly syncIntervalMs: number;
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly peerTimeoutMs: number;
  readonly maxPendingKeys: number;
  readonly maxPeerReplyBytes: number;
  readonly clock: Clock;
  readonly onError: ((error: SluiceError) => void) | undefined;
  readonly autoSync: boolean;
  readonly maxClockSkewMs: number;
  readonly onDecided: ((event: DecidedEvent) => void) | undefined;
  /** How long windows and states outlive their end, for late syncs and clocks a little apart. */
  readonly graceMs: number;
}

const REGION_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function invalid(option: string, message: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_OPTION', `${option}: ${message}`, { option });
}

function wholeMs(value: unknown, option: string, fallback: number, min: number, max: number): number {
  return whole(value, option, fallback, min, max, 'ms');
}

function whole(value: unknown, option: string, fallback: number, min: number, max: number, unit: string): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalid(option, `expected a whole number of ${unit} between ${min} and ${max}, got ${String(value)}`);
  }
  return v;
}

/** Validates the options, every problem with a code and the option it is about. */
export function resolveMultiRegionOptions(options: MultiRegionStoreOptions): ResolvedMultiRegionOptions {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'createMultiRegionStore: expected an options object');
  }
  const { region, regions, mode } = options;
  if (mode !== 'eventual' && mode !== 'escrow') {
    throw invalid('mode', `expected 'eventual' or 'escrow', got ${String(mode)}`);
  }
  if (regions === null || typeof regions !== 'object') {
    throw invalid('regions', 'expected an object mapping region names to Redis clients');
  }
  const regionNames = Object.keys(regions).sort();
  if (regionNames.length === 0) throw invalid('regions', 'expected at least one region');
  if (regionNames.length > 32) throw invalid('regions', `at most 32 regions, got ${regionNames.length}`);
  for (const name of regionNames) {
    if (!REGION_NAME.test(name)) {
      throw invalid('regions', `region name ${JSON.stringify(name)}: use 1–64 letters, digits, '_', '.', '-'`);
    }
  }
  if (typeof region !== 'string' || !regionNames.includes(region)) {
    throw invalid('region', `${JSON.stringify(region)} is not one of the regions (${regionNames.join(', ')})`);
  }
  const transports = new Map<string, RedisTransport>();
  for (const name of regionNames) {
    try {
      transports.set(name, createTransport(regions[name] as RedisClientLike));
    } catch (error) {
      throw invalid(`regions.${name}`, (error as Error).message.replace(/^client: /, ''));
    }
  }
  let localSync: ResolvedMultiRegionOptions['localSync'];
  if (options.syncClient !== undefined) {
    try {
      localSync = createTransport(options.syncClient);
    } catch (error) {
      throw invalid('syncClient', (error as Error).message.replace(/^client: /, ''));
    }
  } else if (canDuplicate(regions[region] as RedisClientLike)) {
    localSync = 'duplicate';
  }
  const syncIntervalMs = wholeMs(options.syncIntervalMs, 'syncIntervalMs', 1000, 10, 3_600_000);
  const onError = options.onError;
  if (onError !== undefined && typeof onError !== 'function') throw invalid('onError', 'expected a function');
  const clock = options.clock ?? systemClock;
  if (typeof clock?.now !== 'function') throw invalid('clock', 'expected an object with now()');
  return {
    region,
    regionNames,
    local: transports.get(region) as RedisTransport,
    localSync,
    peers: regionNames
      .filter((r) => r !== region)
      .map((r) => ({ region: r, transport: transports.get(r) as RedisTransport })),
    mode,
    syncIntervalMs,
    prefix: validatePrefix(options.prefix ?? 'sluice:mr:'),
    timeoutMs: wholeMs(options.timeoutMs, 'timeoutMs', 50, 1, 2 ** 31 - 1),
    peerTimeoutMs: wholeMs(options.peerTimeoutMs, 'peerTimeoutMs', 2000, 1, 2 ** 31 - 1),
    maxPendingKeys: wholeMs(options.maxPendingKeys, 'maxPendingKeys', 100_000, 1, 10_000_000),
    maxPeerReplyBytes: whole(options.maxPeerReplyBytes, 'maxPeerReplyBytes', 1_048_576, 1024, 2 ** 30, 'bytes'),
    clock,
    onError,
    autoSync: options.autoSync ?? true,
    onDecided: typeof options.onDecided === 'function' ? options.onDecided : undefined,
    maxClockSkewMs: wholeMs(options.maxClockSkewMs, 'maxClockSkewMs', 100, 0, 600_000),
    graceMs: wholeMs(options.graceMs, 'graceMs', Math.max(5000, 3 * syncIntervalMs), 0, 86_400_000),
  };
}

/** An ioredis or iovalkey client (or Cluster): `duplicate()` opens a new connection with the same options. */
export interface Duplicable {
  call(...args: unknown[]): unknown;
  duplicate(): RedisClientLike & Duplicate;
  once?(event: 'end', listener: () => void): unknown;
  off?(event: 'end', listener: () => void): unknown;
}

/** A copy made by `duplicate()` (ioredis): its state ('wait' until connect() when made with lazyConnect). */
export interface Duplicate {
  readonly status?: string;
  connect?(): Promise<unknown>;
  disconnect(): void;
  once?(event: 'ready' | 'error' | 'end', listener: () => void): unknown;
}

/** True when the client can open a connection like its own by itself (ioredis, iovalkey). */
export function canDuplicate(client: RedisClientLike): client is RedisClientLike & Duplicable {
  const c = client as Partial<Duplicable>;
  return typeof c.call === 'function' && typeof c.duplicate === 'function';
}
