import { after, before } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from './redis-server.js';

/** A redis-server of the enclosing `describe` and an ioredis client on it. */
export interface RedisFixture {
  readonly server: RedisServerHandle;
  readonly client: Redis;
}

/**
 * Starts a redis-server and an ioredis client before the enclosing `describe` block's tests and stops
 * both after them. Read `client` and `server` inside tests (they exist once `before` has run).
 */
export function useRedis(): RedisFixture {
  let server: RedisServerHandle | undefined;
  let client: Redis | undefined;
  before(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1');
  });
  after(async () => {
    client?.disconnect();
    await server?.stop();
  });
  return {
    get server() {
      if (server === undefined) throw new Error('useRedis: the server starts in before()');
      return server;
    },
    get client() {
      if (client === undefined) throw new Error('useRedis: the client connects in before()');
      return client;
    },
  };
}
