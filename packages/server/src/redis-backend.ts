import type { Store } from 'sluice';
import { SluiceError } from 'sluice';
import { createRedisStore } from 'sluice/redis';
import type { Logger } from './logger.js';

/** How to reach Redis: one server by URL, or a Cluster by its seed nodes. */
export interface RedisOptions {
  /** `redis://[user:pass@]host:port[/db]` (or `rediss://`). */
  url?: string;
  /** Cluster seed nodes, `host:port` each. */
  cluster?: readonly string[];
  /** A Unix socket path, instead of `url` (envoy ratelimit's REDIS_SOCKET_TYPE=unix). */
  path?: string;
  /** Credentials, when not in `url` (for `path` and `cluster`). */
  username?: string;
  password?: string;
  /** TLS to Redis, when not said by `url` (`rediss://`). @default false */
  tls?: boolean;
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

function parseNode(text: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(text.trim());
  if (match === null) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `redis.cluster: '${text}' is not host:port`, {
      option: 'redis.cluster',
    });
  }
  return { host: match[1] as string, port: Number(match[2]) };
}

/**
 * Connects to Redis with ioredis (loaded only when Redis is asked for) and builds the Redis store on it.
 * Commands are not queued while disconnected: with Redis gone, a decision fails at once and the failure
 * policy answers, instead of requests piling up behind a reconnect.
 */
export async function createRedisBackend(options: RedisOptions, logger: Logger): Promise<StoreBackend> {
  const targets = [options.url, options.cluster, options.path].filter((t) => t !== undefined).length;
  if (targets !== 1) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'redis: give one of a url, a socket path or cluster nodes', {
      option: 'redis',
    });
  }
  const ioredis = await loadIoredis();
  const { Redis, Cluster } = ioredis.default as unknown as typeof import('ioredis');
  const auth = {
    ...(options.username === undefined ? {} : { username: options.username }),
    ...(options.password === undefined ? {} : { password: options.password }),
    ...(options.tls === true ? { tls: {} } : {}),
  };
  const common = { ...COMMON, ...auth };
  let client: IoRedisClient;
  if (options.url !== undefined) {
    client = new Redis(options.url, common) as unknown as IoRedisClient;
  } else if (options.path !== undefined) {
    client = new Redis({ ...common, path: options.path }) as unknown as IoRedisClient;
  } else {
    const nodes = (options.cluster ?? []).map(parseNode);
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
    ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
  await connect(client, logger, connectTimeoutMs);
  // The store loads its scripts as the connection becomes ready: wait for that too, so the service
  // listens with a store that can decide (and /healthcheck says ok, not starting).
  await store.ready(connectTimeoutMs).catch(() => {});
  return { store, owned: true, ping: () => client.ping(), close: () => quit(client) };
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

/** Connects, logging one line per distinct failure; starts anyway after `timeoutMs` (degraded). */
async function connect(client: IoRedisClient, logger: Logger, timeoutMs: number): Promise<void> {
  let lastError = '';
  client.on('error', (error) => {
    const message = (error as Error).message;
    // One line per distinct failure, not one per reconnect attempt.
    if (message !== lastError) logger.warn({ err: message }, 'redis error');
    lastError = message;
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
): Promise<{ client: unknown; ping: () => Promise<unknown>; close: () => Promise<void> }> {
  const { Redis } = (await loadIoredis()).default as unknown as typeof import('ioredis');
  const client = new Redis(url, COMMON) as unknown as IoRedisClient;
  await connect(client, logger, 5000);
  return { client, ping: () => client.ping(), close: () => quit(client) };
}
