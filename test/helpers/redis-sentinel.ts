/**
 * A throw-away Redis Sentinel setup for tests: a master, a replica and Sentinel processes, all
 * `redis-server` processes on free loopback ports, stopped by PID (see redis-server.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, type RedisServerHandle, rawReplies, startRedis } from './redis-server.js';

/** Options of {@link startRedisSentinel}. */
export interface StartSentinelOptions {
  /** The name the Sentinels monitor the master under. @default 'mymaster' */
  masterName?: string;
  /** `requirepass` of the master and the replica (and the Sentinels' `auth-pass`). @default none */
  password?: string;
  /** `requirepass` of the Sentinels themselves. @default none */
  sentinelPassword?: string;
  /** How many Sentinels. @default 1 */
  sentinels?: number;
}

/** A running master + replica watched by Sentinels. */
export interface RedisSentinelHandle {
  readonly masterName: string;
  readonly master: RedisServerHandle;
  readonly replica: RedisServerHandle;
  readonly sentinels: RedisServerHandle[];
  /** envoy ratelimit's REDIS_URL for REDIS_TYPE=sentinel: `name,host:port,host:port`. */
  readonly envoyUrl: string;
  /** Asks a Sentinel to fail over now (SENTINEL FAILOVER) and waits until it names the replica as master. */
  failover(): Promise<void>;
  /** Stops every process. */
  stop(): Promise<void>;
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts a master, one replica of it and `sentinels` Sentinels monitoring it (quorum 1), and waits until
 * every Sentinel knows the master and its replica.
 *
 * @example
 * const setup = await startRedisSentinel({ password: 'pw' });
 * // REDIS_TYPE=sentinel REDIS_URL=setup.envoyUrl REDIS_AUTH=pw
 * await setup.stop();
 */
export async function startRedisSentinel(options: StartSentinelOptions = {}): Promise<RedisSentinelHandle> {
  const masterName = options.masterName ?? 'mymaster';
  const auth =
    options.password === undefined ? [] : ['--requirepass', options.password, '--masterauth', options.password];
  const started: RedisServerHandle[] = [];
  const dirs: string[] = [];
  const authCommand = (password: string | undefined) => (password === undefined ? [] : [`AUTH ${password}`]);
  try {
    const master = await startRedis({ args: auth });
    started.push(master);
    const replica = await startRedis({ args: [...auth, '--replicaof', '127.0.0.1', String(master.port)] });
    started.push(replica);
    await until(
      async () =>
        (
          await rawReplies(replica.port, [...authCommand(options.password), 'INFO replication'], (t) =>
            t.includes('master_link_status:'),
          )
        ).includes('master_link_status:up'),
      10_000,
      'the replica to sync',
    );
    const sentinels: RedisServerHandle[] = [];
    for (let i = 0; i < (options.sentinels ?? 1); i++) {
      const dir = mkdtempSync(join(tmpdir(), 'sluice-sentinel-'));
      dirs.push(dir);
      const port = await freePort();
      const file = join(dir, 'sentinel.conf');
      writeFileSync(
        file,
        [
          `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 1`,
          ...(options.password === undefined ? [] : [`sentinel auth-pass ${masterName} ${options.password}`]),
          `sentinel down-after-milliseconds ${masterName} 2000`,
          `sentinel failover-timeout ${masterName} 10000`,
          ...(options.sentinelPassword === undefined ? [] : [`requirepass ${options.sentinelPassword}`]),
          '',
        ].join('\n'),
      );
      const sentinel = await startRedis({ port, configFile: file, args: ['--sentinel'] });
      started.push(sentinel);
      sentinels.push(sentinel);
    }
    const ask = (sentinel: RedisServerHandle, command: string, done: (t: string) => boolean) =>
      rawReplies(sentinel.port, [...authCommand(options.sentinelPassword), command], done);
    for (const sentinel of sentinels) {
      await until(
        async () => {
          // Known, connected and seen in sync: only then can it be promoted.
          const reply = await ask(sentinel, `SENTINEL replicas ${masterName}`, (t) => t.includes('replica-announced'));
          return reply.includes('master-link-status\r\n$2\r\nok') && !reply.includes('disconnected');
        },
        15_000,
        'the sentinel to discover the replica',
      );
    }
    const masterPort = async () =>
      (
        await ask(sentinels[0] as RedisServerHandle, `SENTINEL get-master-addr-by-name ${masterName}`, (t) =>
          /\$\d+\r\n\d+\r\n$/.test(t),
        )
      ).trim();
    return {
      masterName,
      master,
      replica,
      sentinels,
      envoyUrl: [masterName, ...sentinels.map((s) => `127.0.0.1:${s.port}`)].join(','),
      async failover() {
        const lines = authCommand(options.sentinelPassword).length + 1;
        const reply = await ask(
          sentinels[0] as RedisServerHandle,
          `SENTINEL failover ${masterName}`,
          (t) => t.endsWith('\r\n') && t.split('\r\n').length > lines,
        );
        if (/\r\n-|^-/.test(reply)) throw new Error(`SENTINEL failover: ${reply}`);
        await until(async () => (await masterPort()).endsWith(String(replica.port)), 20_000, 'the failover');
      },
      async stop() {
        await Promise.all(started.map((s) => s.stop()));
        for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await Promise.all(started.map((s) => s.stop()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
