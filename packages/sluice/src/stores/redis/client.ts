/**
 * The Redis client, seen through a small structural type so that sluice never imports a client at
 * runtime: an ioredis or iovalkey `Redis` or `Cluster` (anything with `call`), a node-redis v4/v5 client
 * or cluster (`sendCommand`), or a valkey-glide `GlideClient` or `GlideClusterClient`
 * (`customCommand`). Everything the store sends goes through {@link RedisTransport.send}.
 */
import { SluiceError } from '../../core/errors.js';

/**
 * One argument of a command: text, or bytes (a script's packed numbers, which Lua unpacks without
 * parsing them). Every client the store accepts sends both as bulk strings.
 */
export type RedisArg = string | Buffer;

/** An ioredis or iovalkey `Redis` or `Cluster`, or anything with the same `call`. */
export interface IoRedisLike {
  call(command: string, ...args: (string | number | Buffer)[]): Promise<unknown>;
  /** ioredis connection state (`'ready'`, `'reconnecting'`, …); commands are not sent while down. */
  readonly status?: string;
  readonly isCluster?: boolean;
}

/** A node-redis (v4/v5) client: `createClient()`. */
export interface NodeRedisClientLike {
  sendCommand(args: RedisArg[]): Promise<unknown>;
  readonly isReady?: boolean;
}

/** A node-redis (v4/v5) cluster: `createCluster()`. */
export interface NodeRedisClusterLike {
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: RedisArg[]): Promise<unknown>;
  getSlotMaster(slot: number): unknown;
  readonly isOpen?: boolean;
}

/**
 * A valkey-glide client (`GlideClient.createClient()`) or cluster client (`GlideClusterClient`), which
 * sends any command through `customCommand`; a cluster client routes keyed commands by their key.
 */
export interface GlideClientLike {
  // `decoder` is there only so that GlideClient's own options type (a decoder) matches this one.
  customCommand(args: RedisArg[], options?: { route?: 'allPrimaries'; decoder?: unknown }): Promise<unknown>;
  /** Present on `GlideClusterClient` only: how the store tells a cluster client. */
  readonly fcallWithRoute?: unknown;
}

/** Any Redis client the store accepts. */
export type RedisClientLike = IoRedisLike | NodeRedisClientLike | NodeRedisClusterLike | GlideClientLike;

/** What the store needs from a client. */
export interface RedisTransport {
  /** Sends one command; `firstKey` routes it on a cluster. */
  send(args: RedisArg[], firstKey: string | undefined): Promise<unknown>;
  /**
   * Sends a keyless command to every master (SCRIPT LOAD), or to the one server. Where a cluster
   * client cannot address its masters, one of them; the scripts reach the others through NOSCRIPT.
   */
  sendToAll(args: RedisArg[]): Promise<unknown>;
  /** False when the client says it is disconnected, so the store fails fast instead of queueing. */
  ready(): boolean;
  /** True when the client says it is connected and ready for commands (or cannot say). */
  connected(): boolean;
  /** True for a Redis Cluster client: keys in different slots cannot share a script. */
  readonly cluster: boolean;
}

const DOWN_STATUSES = new Set(['close', 'end', 'reconnecting']);

/** An ioredis Cluster's masters, when it can list them (`nodes('master')`). */
interface IoRedisClusterNodes {
  nodes?: (role: 'master') => IoRedisLike[];
}

/** Wraps a client in a transport, or throws `ERR_SLUICE_INVALID_OPTION` naming what is missing. */
export function createTransport(client: RedisClientLike): RedisTransport {
  if (client === null || typeof client !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'client: expected an ioredis or node-redis client', {
      option: 'client',
    });
  }
  if (typeof (client as IoRedisLike).call === 'function') {
    const io = client as IoRedisLike;
    const send = (args: RedisArg[]) => io.call(args[0] as string, ...args.slice(1));
    return {
      send,
      sendToAll(args) {
        const masters = io.isCluster === true ? (io as IoRedisClusterNodes).nodes?.('master') : undefined;
        if (masters === undefined || masters.length === 0) return send(args);
        return Promise.all(masters.map((m) => m.call(args[0] as string, ...args.slice(1))));
      },
      ready: () => typeof io.status !== 'string' || !DOWN_STATUSES.has(io.status),
      connected: () => typeof io.status !== 'string' || io.status === 'ready',
      cluster: io.isCluster === true,
    };
  }
  if (typeof (client as GlideClientLike).customCommand === 'function') {
    const glide = client as GlideClientLike;
    const cluster = typeof glide.fcallWithRoute === 'function';
    // Glide connects before createClient() resolves and reconnects by itself: it has no state to read.
    return {
      send: (args) => glide.customCommand(args),
      sendToAll: (args) => (cluster ? glide.customCommand(args, { route: 'allPrimaries' }) : glide.customCommand(args)),
      ready: () => true,
      connected: () => true,
      cluster,
    };
  }
  if (typeof (client as NodeRedisClusterLike).getSlotMaster === 'function') {
    const cluster = client as NodeRedisClusterLike;
    const send = (args: RedisArg[], firstKey: string | undefined) => cluster.sendCommand(firstKey, false, args);
    return {
      send,
      sendToAll: (args) => send(args, undefined),
      ready: () => cluster.isOpen !== false,
      connected: () => cluster.isOpen !== false,
      cluster: true,
    };
  }
  if (typeof (client as NodeRedisClientLike).sendCommand === 'function') {
    const node = client as NodeRedisClientLike;
    const send = (args: RedisArg[]) => node.sendCommand(args);
    return {
      send,
      sendToAll: send,
      ready: () => node.isReady !== false,
      connected: () => node.isReady !== false,
      cluster: false,
    };
  }
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    'client: expected an ioredis/iovalkey Redis or Cluster (call()), a node-redis client (sendCommand()) or a valkey-glide client (customCommand())',
    { option: 'client' },
  );
}
