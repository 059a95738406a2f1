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
  /**
   * TLS everywhere (PEM files): the master, the replica and the Sentinels get a TLS port too, replication
   * and the Sentinels' links go over TLS, and {@link RedisSentinelHandle.envoyUrl} names the Sentinels' TLS
   * ports. The plain ports stay open for the helper's own checks.
   */
  tls?: { cert: string; key: string; ca: string };
}

/** A running master + replica watched by Sentinels. */
export interface RedisSentinelHandle {
  readonly masterName: string;
  readonly master: RedisServerHandle;
  readonly replica: RedisServerHandle;
  readonly sentinels: RedisServerHandle[];
  /** envoy ratelimit's REDIS_URL for REDIS_TYPE=sentinel: `name,host:port,host:port` (TLS ports with `tls`). */
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
  const tls = options.tls;
  const tlsArgs = (port: number) =>
    tls === undefined
      ? []
      : [
          '--tls-port',
          String(port),
          ...['--tls-cert-file', tls.cert, '--tls-key-file', tls.key, '--tls-ca-cert-file', tls.ca],
          ...['--tls-auth-clients', 'no', '--tls-replication', 'yes'],
        ];
  try {
    const [masterTls, replicaTls] = [await freePort(), await freePort()];
    const master = await startRedis({ args: [...auth, ...tlsArgs(masterTls)] });
    started.push(master);
    // With TLS, the replica follows the master's TLS port and is announced to the Sentinels by its own.
    const replicaOf = tls === undefined ? master.port : masterTls;
    const replica = await startRedis({
      args: [
        ...auth,
        ...tlsArgs(replicaTls),
        ...(tls === undefined ? [] : ['--replica-announce-port', String(replicaTls)]),
        ...['--replicaof', '127.0.0.1', String(replicaOf)],
      ],
    });
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
    const sentinelTls: number[] = [];
    for (let i = 0; i < (options.sentinels ?? 1); i++) {
      const tlsPort = await freePort();
      sentinelTls.push(tlsPort);
      const dir = mkdtempSync(join(tmpdir(), 'sluice-sentinel-'));
      dirs.push(dir);
      const port = await freePort();
      const file = join(dir, 'sentinel.conf');
      writeFileSync(
        file,
        [
          `sentinel monitor ${masterName} 127.0.0.1 ${replicaOf} 1`,
          ...(tls === undefined
            ? []
            : [
                `tls-port ${tlsPort}`,
                `tls-cert-file ${tls.cert}`,
                `tls-key-file ${tls.key}`,
                `tls-ca-cert-file ${tls.ca}`,
                'tls-auth-clients no',
                'tls-replication yes',
              ]),
          ...(options.password === undefined ? [] : [`sentinel auth-pass ${masterName} ${options.password}`]),
          // Failovers here are asked for (failover()); a long grace keeps a machine stalled by load from
          // starting one of its own, which could promote a replica mid-resync and lose the counts.
          `sentinel down-after-milliseconds ${masterName} 60000`,
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
      envoyUrl: [
        masterName,
        ...sentinels.map((s, i) => `127.0.0.1:${tls === undefined ? s.port : sentinelTls[i]}`),
      ].join(','),
      async failover() {
        // Every write on the replica first: the promoted one must hold what the old master held.
        const synced = await rawReplies(
          master.port,
          [...authCommand(options.password), 'WAIT 1 5000'],
          (t) => /:\d+\r\n$/.test(t),
          6000,
        );
        if (!synced.endsWith(':1\r\n')) throw new Error(`WAIT: ${synced}`);
        const lines = authCommand(options.sentinelPassword).length + 1;
        const reply = await ask(
          sentinels[0] as RedisServerHandle,
          `SENTINEL failover ${masterName}`,
          (t) => t.endsWith('\r\n') && t.split('\r\n').length > lines,
        );
        if (/\r\n-|^-/.test(reply)) throw new Error(`SENTINEL failover: ${reply}`);
        const promoted = String(tls === undefined ? replica.port : replicaTls);
        await until(async () => (await masterPort()).endsWith(promoted), 20_000, 'the failover');
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
