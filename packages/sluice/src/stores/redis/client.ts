/**
 * The Redis client, seen through a small structural type so that sluice never imports a client at
 * runtime: an ioredis `Redis` or `Cluster` (anything with `call`), or a node-redis v4/v5 client or
 * cluster (`sendCommand`). Everything the store sends goes through {@link RedisTransport.send}.
 */
import { SluiceError } from '../../core/errors.js';

/** An ioredis `Redis` or `Cluster`, or anything with the same `call`. */
export interface IoRedisLike {
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  /** ioredis connection state (`'ready'`, `'reconnecting'`, …); commands are not sent while down. */
  readonly status?: string;
  readonly isCluster?: boolean;
}

/** A node-redis (v4/v5) client: `createClient()`. */
export interface NodeRedisClientLike {
  sendCommand(args: string[]): Promise<unknown>;
  readonly isReady?: boolean;
}

/** A node-redis (v4/v5) cluster: `createCluster()`. */
export interface NodeRedisClusterLike {
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  getSlotMaster(slot: number): unknown;
  readonly isOpen?: boolean;
}

/** Any Redis client the store accepts. */
export type RedisClientLike = IoRedisLike | NodeRedisClientLike | NodeRedisClusterLike;

/** What the store needs from a client. */
export interface RedisTransport {
  /** Sends one command; `firstKey` routes it on a cluster. */
  send(args: string[], firstKey: string | undefined): Promise<unknown>;
  /** False when the client says it is disconnected, so the store fails fast instead of queueing. */
  ready(): boolean;
  /** True for a Redis Cluster client: keys in different slots cannot share a script. */
  readonly cluster: boolean;
}

const DOWN_STATUSES = new Set(['close', 'end', 'reconnecting']);

/** Wraps a client in a transport, or throws `ERR_SLUICE_INVALID_OPTION` naming what is missing. */
export function createTransport(client: RedisClientLike): RedisTransport {
  if (client === null || typeof client !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'client: expected an ioredis or node-redis client', {
      option: 'client',
    });
  }
  if (typeof (client as IoRedisLike).call === 'function') {
    const io = client as IoRedisLike;
    return {
      send: (args) => io.call(args[0] as string, ...args.slice(1)),
      ready: () => typeof io.status !== 'string' || !DOWN_STATUSES.has(io.status),
      cluster: io.isCluster === true,
    };
  }
  if (typeof (client as NodeRedisClusterLike).getSlotMaster === 'function') {
    const cluster = client as NodeRedisClusterLike;
    return {
      send: (args, firstKey) => cluster.sendCommand(firstKey, false, args),
      ready: () => cluster.isOpen !== false,
      cluster: true,
    };
  }
  if (typeof (client as NodeRedisClientLike).sendCommand === 'function') {
    const node = client as NodeRedisClientLike;
    return {
      send: (args) => node.sendCommand(args),
      ready: () => node.isReady !== false,
      cluster: false,
    };
  }
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    'client: expected an ioredis Redis/Cluster (with call()) or a node-redis client (with sendCommand())',
    { option: 'client' },
  );
}
