/**
 * Test helpers that start throw-away `redis-server` processes on free loopback ports and stop them by
 * PID. Tests never touch the shared Redis on 6379.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Path of the redis-server binary; overridable for machines where it lives elsewhere. */
const REDIS_SERVER = process.env.SLUICE_REDIS_SERVER ?? '/usr/bin/redis-server';
/** Path of redis-cli (used to create clusters). */
const REDIS_CLI = process.env.SLUICE_REDIS_CLI ?? '/usr/bin/redis-cli';

/** Options for {@link startRedis}. */
export interface StartRedisOptions {
  /** Port to listen on; a free loopback port when omitted (e.g. to restart on the same port). */
  port?: number;
  /** Extra `redis-server` arguments, e.g. `['--maxmemory', '10mb']`. */
  args?: readonly string[];
  /** How long to wait for PING to answer. @default 5000 */
  readyTimeoutMs?: number;
  /**
   * A config file, given first on the command line (redis-server reads it before the flags). A Sentinel
   * needs one it can rewrite.
   */
  configFile?: string;
}

/** A running test Redis. */
export interface RedisServerHandle {
  /** Loopback port it listens on. */
  port: number;
  /** `redis://127.0.0.1:<port>` */
  url: string;
  /** PID of the redis-server process. */
  pid: number;
  /** Stops the server (SIGTERM, then SIGKILL after 2 s) and waits for it to exit. Idempotent. */
  stop(): Promise<void>;
  /** Sends a signal (default SIGKILL) to the server process, without waiting. */
  kill(signal?: NodeJS.Signals): void;
}

/** Returns a port that was free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Sends inline commands on one new connection and resolves with everything read once `done` says it is
 * complete; rejects on a socket error or after `timeoutMs`.
 */
export function rawReplies(
  port: number,
  commands: readonly string[],
  done: (text: string) => boolean,
  timeoutMs = 500,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = new Socket();
    let buf = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`timeout: ${buf}`));
    }, timeoutMs);
    sock.on('error', (err) => {
      clearTimeout(timer);
      sock.destroy();
      reject(err);
    });
    sock.on('data', (chunk) => {
      buf += chunk.toString();
      if (done(buf)) {
        clearTimeout(timer);
        sock.destroy();
        resolve(buf);
      }
    });
    sock.connect(port, '127.0.0.1', () => sock.write(commands.map((c) => `${c}\r\n`).join('')));
  });
}

/** Sends one inline command and resolves with the first reply line, or rejects on error/timeout. */
async function rawCommand(port: number, command: string, timeoutMs = 500): Promise<string> {
  const reply = await rawReplies(port, [command], (t) => t.includes('\r\n'), timeoutMs);
  return reply.slice(0, reply.indexOf('\r\n'));
}

/** Children still running, killed when the test process exits so no redis-server outlives its test. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function waitExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/**
 * Starts `redis-server` on a free loopback port with persistence off and waits until it answers PING.
 *
 * @example
 * const redis = await startRedis();
 * try { ... new Redis(redis.port) ... } finally { await redis.stop(); }
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServerHandle> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 5000;
  let lastError: unknown;
  // A free port can be taken between probing and binding; retry a few times when we chose it.
  for (let attempt = 0; attempt < (options.port === undefined ? 5 : 1); attempt++) {
    const port = options.port ?? (await freePort());
    try {
      return await spawnRedis(port, options.args ?? [], readyTimeoutMs, options.configFile);
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

async function spawnRedis(
  port: number,
  args: readonly string[],
  readyTimeoutMs: number,
  configFile: string | undefined,
): Promise<RedisServerHandle> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'));
  const child = spawn(
    REDIS_SERVER,
    [
      ...(configFile === undefined ? [] : [configFile]),
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--logfile',
      '',
      '--loglevel',
      'warning',
      ...args,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += d.toString();
  });
  // The helper must never keep a test process alive on its own.
  child.unref();
  (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not spawn ${REDIS_SERVER}`);
  let exited = false;
  live.add(child);
  child.once('exit', () => {
    exited = true;
    live.delete(child);
  });
  try {
    await waitFor(
      async () => {
        if (exited) throw new Error(`redis-server exited: ${stderr}`);
        // A server with a password answers NOAUTH: it is up all the same.
        const reply = await rawCommand(port, 'PING');
        return reply === '+PONG' || reply.startsWith('-NOAUTH');
      },
      readyTimeoutMs,
      `redis-server on port ${port}`,
    );
  } catch (err) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`redis-server failed to start on ${port}: ${(err as Error).message} ${stderr}`);
  }
  let stopping: Promise<void> | undefined;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid,
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (!exited) child.kill(signal);
    },
    stop() {
      stopping ??= (async () => {
        if (!exited) {
          child.kill('SIGTERM');
          if (!(await waitExit(child, 2000))) {
            child.kill('SIGKILL');
            await waitExit(child, 2000);
          }
        }
        rmSync(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

/** A running test Redis Cluster. */
export interface RedisClusterHandle {
  /** Ports of the master nodes, in order. */
  ports: number[];
  /** The node handles (one per master). */
  nodes: RedisServerHandle[];
  /** `[{ host: '127.0.0.1', port }]` for every node, the shape ioredis' `Cluster` takes. */
  startupNodes: { host: string; port: number }[];
  /** Stops every node. */
  stop(): Promise<void>;
}

/**
 * Starts a Redis Cluster of `masters` master nodes (no replicas) on free loopback ports and waits until
 * `cluster_state:ok` on every node.
 *
 * @example
 * const cluster = await startRedisCluster();
 * const client = new Redis.Cluster(cluster.startupNodes);
 */
export async function startRedisCluster(masters = 3, options: { password?: string } = {}): Promise<RedisClusterHandle> {
  const auth =
    options.password === undefined ? [] : ['--requirepass', options.password, '--masterauth', options.password];
  const nodes: RedisServerHandle[] = [];
  try {
    for (let i = 0; i < masters; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'sluice-cluster-'));
      const node = await startRedis({
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, 'nodes.conf'),
          '--cluster-node-timeout',
          '2000',
          ...auth,
        ],
      });
      const stop = node.stop;
      node.stop = async () => {
        await stop();
        rmSync(dir, { recursive: true, force: true });
      };
      nodes.push(node);
    }
    const addrs = nodes.map((n) => `127.0.0.1:${n.port}`);
    const cliAuth = options.password === undefined ? [] : ['-a', options.password, '--no-auth-warning'];
    const res = spawnSync(
      REDIS_CLI,
      [...cliAuth, '--cluster', 'create', ...addrs, '--cluster-replicas', '0', '--cluster-yes'],
      {
        encoding: 'utf8',
        timeout: 20000,
      },
    );
    if (res.status !== 0) throw new Error(`redis-cli --cluster create failed: ${res.stdout} ${res.stderr}`);
    for (const n of nodes) {
      await waitFor(
        async () => (await clusterInfo(n.port, options.password)).includes('cluster_state:ok'),
        10000,
        `cluster state ok on ${n.port}`,
      );
    }
  } catch (err) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw err;
  }
  return {
    ports: nodes.map((n) => n.port),
    nodes,
    startupNodes: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}

/** CLUSTER INFO's bulk reply body (read fully, unlike {@link rawCommand}). */
function clusterInfo(port: number, password?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = new Socket();
    let buf = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error('timeout'));
    }, 500);
    sock.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    sock.on('data', (chunk) => {
      buf += chunk.toString();
      if (buf.includes('cluster_state:')) {
        const end = buf.indexOf('\r\n', buf.indexOf('cluster_state:'));
        if (end >= 0) {
          clearTimeout(timer);
          sock.destroy();
          resolve(buf);
        }
      }
    });
    const auth = password === undefined ? '' : `AUTH ${password}\r\n`;
    sock.connect(port, '127.0.0.1', () => sock.write(`${auth}CLUSTER INFO\r\n`));
  });
}
