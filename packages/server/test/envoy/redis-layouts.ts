/**
 * The Redis layouts envoy ratelimit's integration test runs its cases over (one Redis, a second one for
 * per-second limits, passwords, TLS with and without a client certificate, Cluster, Sentinel), as real
 * `redis-server` processes on loopback ports, with the envoy variables that point `sluice serve` at them.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startRedisSentinel } from '../../../../test/helpers/redis-sentinel.js';
import {
  freePort,
  type RedisServerHandle,
  startRedis,
  startRedisCluster,
} from '../../../../test/helpers/redis-server.js';
import { createPki } from './pki.js';

/** envoy ratelimit's test password. */
export const PASSWORD = 'password123';

/** A node to read keys from, as a test client reaches it. */
interface NodeAccess {
  port: number;
  password?: string;
  tls?: { ca: string; cert?: string; key?: string; servername?: string };
}

/** What a test reads of one Redis. */
export interface Inspect {
  /** Keys matching `pattern`. */
  keys(pattern: string): Promise<string[]>;
  /** Script calls it has run (decisions: one call each, or one per batch). */
  scriptCalls(): Promise<number>;
}

/** Redis processes started for a layout, and the envoy variables that describe them. */
export interface Backing {
  readonly env: Record<string, string>;
  /** The main Redis, and the per-second one (the main one again when there is none). */
  readonly main: Inspect;
  readonly perSecond: Inspect;
  stop(): Promise<void>;
}

/** A layout of envoy's integration test. */
export interface Layout {
  readonly name: string;
  /** A second Redis takes the per-second limits. */
  readonly perSecond: boolean;
  /** LOCAL_CACHE_SIZE_IN_BYTES is set. */
  readonly localCache: boolean;
  /** CACHE_KEY_PREFIX, when set. */
  readonly prefix?: string;
  start(): Promise<Backing>;
}

/** Runs `read` on a plain client of each node, in turn. */
async function onNodes<T>(nodes: readonly NodeAccess[], read: (client: Redis) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (const node of nodes) {
    const client = new Redis({
      host: '127.0.0.1',
      port: node.port,
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      ...(node.password === undefined ? {} : { password: node.password }),
      ...(node.tls === undefined ? {} : { tls: node.tls }),
    });
    try {
      await client.connect();
      out.push(await read(client));
    } finally {
      client.disconnect();
    }
  }
  return out;
}

/** Keys matching `pattern` on the nodes, and the script calls (EVAL, EVALSHA, FCALL) they have run. */
function inspect(nodes: readonly NodeAccess[]): Inspect {
  return {
    keys: async (pattern) => (await onNodes(nodes, (c) => c.keys(pattern))).flat(),
    scriptCalls: async () => {
      const stats = await onNodes(nodes, (c) => c.info('commandstats'));
      let calls = 0;
      for (const m of stats.join('\n').matchAll(/^cmdstat_(?:eval|evalsha|evalsha_ro|eval_ro|fcall):calls=(\d+)/gm)) {
        calls += Number(m[1]);
      }
      return calls;
    },
  };
}

/** `host:port` as envoy's REDIS_URL takes it. */
const at = (port: number, host = '127.0.0.1') => `${host}:${port}`;

const TCP = { REDIS_SOCKET_TYPE: 'tcp', REDIS_PERSECOND_SOCKET_TYPE: 'tcp' };
/** Generous: the suite runs on a loaded machine, and a slow reply must not read as an outage. */
const TIMEOUTS = { REDIS_TIMEOUT: '2s', REDIS_PERSECOND_TIMEOUT: '2s' };

/** One plain Redis, and a second for per-second limits when `perSecond`. */
function plain(name: string, opts: { perSecond: boolean; localCache: boolean; password?: string; prefix?: string }) {
  const layout: Layout = {
    name,
    perSecond: opts.perSecond,
    localCache: opts.localCache,
    ...(opts.prefix === undefined ? {} : { prefix: opts.prefix }),
    async start() {
      const args = opts.password === undefined ? [] : ['--requirepass', opts.password];
      const servers = await Promise.all([startRedis({ args }), ...(opts.perSecond ? [startRedis({ args })] : [])]);
      const [main, second] = servers as [RedisServerHandle, RedisServerHandle | undefined];
      const access = (s: RedisServerHandle): NodeAccess => ({
        port: s.port,
        ...(opts.password === undefined ? {} : { password: opts.password }),
      });
      return {
        env: {
          ...TCP,
          ...TIMEOUTS,
          REDIS_URL: at(main.port),
          ...(second === undefined ? {} : { REDIS_PERSECOND: 'true', REDIS_PERSECOND_URL: at(second.port) }),
          ...(opts.password === undefined ? {} : { REDIS_AUTH: opts.password, REDIS_PERSECOND_AUTH: opts.password }),
          ...(opts.localCache ? { LOCAL_CACHE_SIZE_IN_BYTES: '1000' } : {}),
          ...(opts.prefix === undefined ? {} : { CACHE_KEY_PREFIX: opts.prefix }),
        },
        main: inspect([access(main)]),
        perSecond: inspect([access(second ?? main)]),
        stop: async () => {
          await Promise.all(servers.map((s) => s?.stop()));
        },
      };
    },
  };
  return layout;
}

/**
 * Redis over TLS (with a password, as envoy's stunnel setup): the server's certificate from a CA of this
 * run (REDIS_TLS_CACERT). With `clientCert`, Redis requires a client certificate (REDIS_TLS_CLIENT_CERT,
 * REDIS_TLS_CLIENT_KEY) and its own certificate names another host (REDIS_TLS_SKIP_HOSTNAME_VERIFICATION).
 */
function overTls(name: string, opts: { perSecond: boolean; localCache: boolean; clientCert: boolean }): Layout {
  return {
    name,
    perSecond: opts.perSecond,
    localCache: opts.localCache,
    async start() {
      const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-tls-'));
      const pki = createPki(dir);
      const ca = pki.ca('redis-ca');
      const server = pki.leaf(
        'redis',
        'redis-ca',
        opts.clientCert ? 'DNS:redis.internal' : 'IP:127.0.0.1,DNS:localhost',
      );
      const client = pki.leaf('client', 'redis-ca', 'DNS:ratelimit');
      const start = async () => {
        const tlsPort = await freePort();
        const handle = await startRedis({
          args: [
            '--requirepass',
            PASSWORD,
            '--tls-port',
            String(tlsPort),
            '--tls-cert-file',
            server.cert,
            '--tls-key-file',
            server.key,
            '--tls-ca-cert-file',
            ca,
            '--tls-auth-clients',
            opts.clientCert ? 'yes' : 'no',
          ],
        });
        return { handle, tlsPort };
      };
      const servers = await Promise.all([start(), ...(opts.perSecond ? [start()] : [])]);
      const [main, second] = servers as [(typeof servers)[0], (typeof servers)[0] | undefined];
      const access = (s: { tlsPort: number }): NodeAccess => ({
        port: s.tlsPort,
        password: PASSWORD,
        tls: { ...clientFiles(), ...(opts.clientCert ? { servername: 'redis.internal' } : {}) },
      });
      const clientFiles = () =>
        opts.clientCert
          ? { cert: readText(client.cert), key: readText(client.key), ca: readText(ca) }
          : { ca: readText(ca) };
      return {
        env: {
          ...TCP,
          ...TIMEOUTS,
          REDIS_URL: at(main.tlsPort),
          REDIS_TLS: 'true',
          REDIS_AUTH: PASSWORD,
          REDIS_TLS_CACERT: ca,
          ...(second === undefined
            ? {}
            : {
                REDIS_PERSECOND: 'true',
                REDIS_PERSECOND_URL: at(second.tlsPort),
                REDIS_PERSECOND_TLS: 'true',
                REDIS_PERSECOND_AUTH: PASSWORD,
              }),
          ...(opts.clientCert
            ? {
                REDIS_TLS_CLIENT_CERT: client.cert,
                REDIS_TLS_CLIENT_KEY: client.key,
                REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: 'true',
              }
            : {}),
          ...(opts.localCache ? { LOCAL_CACHE_SIZE_IN_BYTES: '1000' } : {}),
        },
        main: inspect([access(main)]),
        perSecond: inspect([access(second ?? main)]),
        stop: async () => {
          await Promise.all(servers.map((s) => s?.handle.stop()));
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

const readText = (file: string) => readFileSync(file, 'utf8');

/** Two 3-master Clusters with passwords (envoy's: one for per-second limits). */
const cluster: Layout = {
  name: 'Redis Cluster with auth, and a per-second Cluster',
  perSecond: true,
  localCache: false,
  async start() {
    const [main, second] = await Promise.all([
      startRedisCluster(3, { password: PASSWORD }),
      startRedisCluster(3, { password: PASSWORD }),
    ]);
    const list = (ports: number[]) => ports.map((p) => at(p)).join(',');
    return {
      env: {
        ...TIMEOUTS,
        REDIS_TYPE: 'cluster',
        REDIS_URL: list(main.ports),
        REDIS_AUTH: PASSWORD,
        REDIS_PERSECOND: 'true',
        REDIS_PERSECOND_TYPE: 'cluster',
        REDIS_PERSECOND_URL: list(second.ports),
        REDIS_PERSECOND_AUTH: PASSWORD,
      },
      main: inspect(main.ports.map((port) => ({ port, password: PASSWORD }))),
      perSecond: inspect(second.ports.map((port) => ({ port, password: PASSWORD }))),
      stop: async () => {
        await Promise.all([main.stop(), second.stop()]);
      },
    };
  },
};

/** Masters behind Sentinels (envoy's `mymaster,host:port,...`), with passwords on Redis and on the Sentinels. */
const sentinel: Layout = {
  name: 'Redis Sentinel with auth, and a per-second Sentinel',
  perSecond: true,
  localCache: true,
  async start() {
    const [main, second] = await Promise.all([
      startRedisSentinel({ password: PASSWORD, sentinelPassword: 'sentinel-secret', sentinels: 2 }),
      startRedisSentinel({ password: PASSWORD }),
    ]);
    return {
      env: {
        ...TIMEOUTS,
        REDIS_TYPE: 'sentinel',
        REDIS_URL: main.envoyUrl,
        REDIS_AUTH: PASSWORD,
        REDIS_SENTINEL_AUTH: 'sentinel-secret',
        REDIS_PERSECOND: 'true',
        REDIS_PERSECOND_TYPE: 'sentinel',
        REDIS_PERSECOND_URL: second.envoyUrl,
        REDIS_PERSECOND_AUTH: PASSWORD,
        LOCAL_CACHE_SIZE_IN_BYTES: '1000',
      },
      // The master as it is now (a failover test may have moved it).
      main: inspect([{ port: main.master.port, password: PASSWORD }]),
      perSecond: inspect([{ port: second.master.port, password: PASSWORD }]),
      stop: async () => {
        await Promise.all([main.stop(), second.stop()]);
      },
    };
  },
};

/** The layouts, as envoy's TestBasicConfig, TestBasicAuthConfig, TestBasicTLSConfig, ...WithRedisCluster/Sentinel. */
export const LAYOUTS: readonly Layout[] = [
  plain('one Redis, CACHE_KEY_PREFIX', { perSecond: false, localCache: false, prefix: 'prefix:' }),
  plain('a per-second Redis', { perSecond: true, localCache: false }),
  plain('a per-second Redis, auth, local cache', { perSecond: true, localCache: true, password: PASSWORD }),
  overTls('TLS and auth, a per-second Redis over TLS', { perSecond: true, localCache: false, clientCert: false }),
  overTls('TLS with a client certificate, hostname not verified', {
    perSecond: false,
    localCache: true,
    clientCert: true,
  }),
  cluster,
  sentinel,
];
