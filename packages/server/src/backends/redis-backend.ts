/**
 * The Redis backend: connects ioredis to one server, a Cluster or Sentinels (TLS, auth), builds the Redis store on it, pings it for health.
 */
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import type { Store } from 'sluice';
import { SluiceError } from 'sluice';
import { createRedisReservationRecords, createRedisStore } from 'sluice/redis';
import type { Logger } from '../observability/logger.js';
import { registerReservationRecords } from './store-reservation-records.js';

/** Redis behind Sentinels: the master is asked of them, and asked again after a failover. */
export interface RedisSentinelOptions {
  /** The name the Sentinels monitor the master under. */
  name: string;
  /** The Sentinels, `host:port` each. */
  sentinels: readonly string[];
  /** Password of the Sentinels themselves (envoy's REDIS_SENTINEL_AUTH), when they have one. */
  password?: string;
  username?: string;
}

/** TLS to Redis with files (envoy's REDIS_TLS_CLIENT_CERT, REDIS_TLS_CLIENT_KEY, REDIS_TLS_CACERT, ...). */
export interface RedisTlsOptions {
  /** PEM file of CAs trusted besides the system's. */
  caFile?: string;
  /** Client certificate (PEM) and its key, for a Redis that checks clients (`tls-auth-clients yes`). */
  certFile?: string;
  keyFile?: string;
  /**
   * Check the server's certificate chain but not the name in it (envoy's
   * REDIS_TLS_SKIP_HOSTNAME_VERIFICATION). @default false
   */
  skipHostnameVerification?: boolean;
}

/** How to reach Redis: one server by URL, a Cluster by its seed nodes, or a master through Sentinels. */
export interface RedisOptions {
  /** `redis://[user:pass@]host:port[/db]` (or `rediss://`). */
  url?: string;
  /** Cluster seed nodes, `host:port` each. */
  cluster?: readonly string[];
  /** A master found through Sentinels. */
  sentinel?: RedisSentinelOptions;
  /** A Unix socket path, instead of `url` (envoy ratelimit's REDIS_SOCKET_TYPE=unix). */
  path?: string;
  /** Credentials, when not in `url` (for `path` and `cluster`). */
  username?: string;
  password?: string;
  /** TLS to Redis, when not said by `url` (`rediss://`); with files, a client certificate or own CAs. @default false */
  tls?: boolean | RedisTlsOptions;
  /**
   * The Redis store's local over-limit cache: on, off, or bounded in keys. @default the store's (on, 10 000 keys)
   */
  localCache?: boolean | { maxKeys: number };
  /** Key prefix of every counter. @default the store's (`sluice:`) */
  prefix?: string;
  /** Longest wait for Redis per decision, in ms. @default the store's (50) */
  timeoutMs?: number;
  /** How long to wait for the first connection before starting anyway (degraded). @default 5000 */
  connectTimeoutMs?: number;
}

/** A store and what the service needs to run it. */
export interface StoreBackend {
  readonly store: Store;
  /** Resolves when the store's server answers (health checks); absent for in-process stores. */
  readonly ping?: () => Promise<unknown>;
  /** True when the service created the store and must close it. */
  readonly owned: boolean;
  /** Releases what the backend opened besides the store (the Redis connection). */
  close(): Promise<void>;
}

interface IoRedisClient {
  status: string;
  ping(): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
}

function parseNode(text: string, option: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(text.trim());
  if (match === null || Number(match[2]) > 65535) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${option}: '${text}' is not host:port`, { option });
  }
  return { host: match[1] as string, port: Number(match[2]) };
}

function readPem(file: string, option: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${option}: cannot read '${file}' (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      { option },
    );
  }
}

/**
 * Node's TLS options from ours, files read once at start (a missing file stops the start, named). Own CAs
 * are trusted besides the system's, as envoy ratelimit adds them to Go's system pool.
 */
export function redisTlsOptions(tls: boolean | RedisTlsOptions | undefined): object | undefined {
  if (tls === undefined || tls === false) return undefined;
  if (tls === true) return {};
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      'redis.tls: a client certificate needs both certFile and keyFile',
      {
        option: 'redis.tls',
      },
    );
  }
  return {
    ...(tls.caFile === undefined
      ? {}
      : { ca: [...rootCertificates, readPem(tls.caFile, 'redis.tls.caFile').toString()] }),
    ...(tls.certFile === undefined ? {} : { cert: readPem(tls.certFile, 'redis.tls.certFile') }),
    ...(tls.keyFile === undefined ? {} : { key: readPem(tls.keyFile, 'redis.tls.keyFile') }),
    // The chain is still verified against the CAs; only the name check is skipped.
    ...(tls.skipHostnameVerification === true ? { checkServerIdentity: () => undefined } : {}),
  };
}

/**
 * Connects to Redis with ioredis (loaded only when Redis is asked for) and builds the Redis store on it.
 * Commands are not queued while disconnected: with Redis gone, a decision fails at once and the failure
 * policy answers, instead of requests piling up behind a reconnect.
 */
export async function createRedisBackend(options: RedisOptions, logger: Logger): Promise<StoreBackend> {
  const targets = [options.url, options.cluster, options.path, options.sentinel].filter((t) => t !== undefined).length;
  if (targets !== 1) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      'redis: give one of a url, a socket path, cluster nodes or sentinels',
      { option: 'redis' },
    );
  }
  const tls = redisTlsOptions(options.tls);
  const ioredis = await loadIoredis();
  const { Redis, Cluster } = ioredis.default as unknown as typeof import('ioredis');
  const auth = {
    ...(options.username === undefined ? {} : { username: options.username }),
    ...(options.password === undefined ? {} : { password: options.password }),
    ...(tls === undefined ? {} : { tls }),
  };
  const common = { ...COMMON, ...auth };
  let client: IoRedisClient;
  if (options.url !== undefined) {
    client = new Redis(options.url, common) as unknown as IoRedisClient;
  } else if (options.path !== undefined) {
    client = new Redis({ ...common, path: options.path }) as unknown as IoRedisClient;
  } else if (options.sentinel !== undefined) {
    client = new Redis({ ...common, ...sentinelOptions(options.sentinel, tls) }) as unknown as IoRedisClient;
  } else {
    const nodes = (options.cluster ?? []).map((n) => parseNode(n, 'redis.cluster'));
    client = new Cluster(nodes, {
      enableOfflineQueue: false,
      clusterRetryStrategy: (times: number) => Math.min(50 * times, 1000),
      lazyConnect: true,
      redisOptions: { ...auth, maxRetriesPerRequest: 0 },
    }) as unknown as IoRedisClient;
  }
  const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  // The store first: it holds decisions until the first connection and loads its scripts on it.
  const store = createRedisStore({
    client: client as never,
    connectTimeoutMs,
    ...(options.localCache === undefined ? {} : { localCache: options.localCache }),
    ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
  // The store loads its scripts as the connection becomes ready: wait for that too, so the service
  // listens with a store that can decide (and /healthcheck says ok, not starting). Not when Redis could
  // not be reached: the start has waited long enough.
  if (await connect(client, logger, connectTimeoutMs)) await store.ready(connectTimeoutMs).catch(() => {});
  // /v1/check's reservations, recorded beside the counters; the records take a hash tag of their own, so a
  // prefix that holds one leaves the reservations in the process.
  const prefix = options.prefix ?? 'sluice:';
  if (!/[{}]/.test(prefix)) {
    const records = createRedisReservationRecords({ client: client as never, prefix, name: 'check-reservations' });
    registerReservationRecords(store, records);
  }
  return { store, owned: true, ping: () => client.ping(), close: () => quit(client) };
}

/**
 * ioredis' Sentinel options. As envoy ratelimit, TLS (when on) is used to the Sentinels and to the
 * master alike, and the Sentinels have a password of their own. A Sentinel that cannot be reached, or
 * does not know the master, is skipped for the next; when none answers, ioredis starts over (retry below).
 */
function sentinelOptions(sentinel: RedisSentinelOptions, tls: object | undefined): object {
  if (typeof sentinel.name !== 'string' || sentinel.name === '' || sentinel.sentinels.length === 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      'redis.sentinel: give the master name and at least one Sentinel host:port',
      { option: 'redis.sentinel' },
    );
  }
  return {
    name: sentinel.name,
    sentinels: sentinel.sentinels.map((n) => parseNode(n, 'redis.sentinel.sentinels')),
    ...(sentinel.password === undefined ? {} : { sentinelPassword: sentinel.password }),
    ...(sentinel.username === undefined ? {} : { sentinelUsername: sentinel.username }),
    ...(tls === undefined ? {} : { enableTLSForSentinelMode: true, sentinelTLS: tls }),
    // Never give up on the Sentinels: they coming back must heal the service without a restart.
    sentinelRetryStrategy: (times: number) => Math.min(50 * times, 1000),
    // Asked of a Sentinel: connect only to a master, never to a replica it would name during a failover.
    role: 'master',
  };
}

/** ioredis, loaded only when Redis is asked for. */
async function loadIoredis(): Promise<{ default: unknown }> {
  try {
    return (await import('ioredis')) as { default: unknown };
  } catch {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      'redis: the ioredis package is needed for Redis; npm install ioredis',
      {
        option: 'redis',
      },
    );
  }
}

/** Client options: no offline queue, no retries per request, reconnect quickly but forever. */
const COMMON = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  // Reconnect quickly but never give up: Redis coming back must heal the service without a restart.
  retryStrategy: (times: number) => Math.min(50 * times, 1000),
  lazyConnect: true,
};

/**
 * Connects, logging one line per distinct failure; starts anyway after `timeoutMs` (degraded). Resolves
 * true when connected in time.
 */
async function connect(client: IoRedisClient, logger: Logger, timeoutMs: number): Promise<boolean> {
  let lastError = '';
  client.on('error', (error) => {
    const message = (error as Error).message;
    // One line per distinct failure, not one per reconnect attempt ("retrying after 50ms", "... 100ms"
    // are one failure).
    const kind = message.replace(/\d+/g, '#');
    // A connection sluice itself dropped (a multi-region peer's reply too large) keeps its own code.
    const own = (error as { code?: unknown }).code;
    const code = typeof own === 'string' && own.startsWith('ERR_SLUICE_') ? own : 'ERR_SLUICE_STORE_UNAVAILABLE';
    if (kind !== lastError) logger.warn({ err: message, code }, 'redis error');
    lastError = kind;
  });
  client.on('ready', () => {
    if (lastError !== '') logger.info('redis connected again');
    lastError = '';
  });
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
    (client as unknown as { connect(): Promise<void> }).connect().catch(() => {});
  });
  if (!ready)
    logger.warn(
      { timeoutMs },
      'redis is not reachable yet; starting anyway (/healthcheck says 503 starting until it is; decisions follow the failure policy)',
    );
  return ready;
}

async function quit(client: IoRedisClient): Promise<void> {
  try {
    if (client.status === 'ready') await client.quit();
    else client.disconnect();
  } catch {
    client.disconnect();
  }
}

/** One Redis server by URL, connected as the service connects (for the multi-region store). */
export async function connectRedis(
  url: string,
  logger: Logger,
  beforeConnect?: (client: unknown) => void,
): Promise<{ client: unknown; ping: () => Promise<unknown>; close: () => Promise<void> }> {
  const { Redis } = (await loadIoredis()).default as unknown as typeof import('ioredis');
  const client = new Redis(url, COMMON) as unknown as IoRedisClient;
  // Before the first connection (a multi-region peer's reply bound watches it from its ready check on).
  beforeConnect?.(client);
  await connect(client, logger, 5000);
  return { client, ping: () => client.ping(), close: () => quit(client) };
}
