/**
 * The HTTP middleware under load: requests per second and p99 latency with autocannon, 50
 * connections, for bare Fastify and Express, each with sluice and with the library people would
 * pick instead (@fastify/rate-limit, express-rate-limit), on the memory store and on Redis
 * (a redis-server this benchmark starts), in two passes: limits set high (nothing rejected) and
 * limits set low (after the first 100 requests everything is rejected).
 *
 *   npm run bench -- http
 *   BENCH_HTTP_DURATION=5 BENCH_HTTP_ROUNDS=7 npm run bench -- http      # longer, steadier
 *   BENCH_HTTP_ONLY=fastify/sluice/redis,fastify/peer/redis BENCH_HTTP_PASSES=allow npm run bench -- http
 *   BENCH_HTTP_PROFILE=/tmp/prof npm run bench -- http    # each server writes a --cpu-prof profile there
 *
 * Every server runs in a child process of its own; autocannon runs in this one, with the same settings
 * for every variant. On a small machine the load generator, the servers and Redis share the cores,
 * so absolute numbers are low and swing with whatever else runs; the ratios within one run are what
 * to read. The servers of a pass all start first, then ROUNDS rounds load each in turn and the median
 * is reported; besides req/s and p99, the server's own CPU time per request (process.cpuUsage) is
 * measured, which the load of other processes disturbs far less than throughput. What a limiter costs
 * is the CPU it *adds* per request over the bare framework of the same run (the floor no limiter can
 * beat), taken round by round (the median of each round's difference): the last table compares that
 * between sluice and the peer. Differences of a microsecond or two stay within the machine's drift;
 * bench/http-instructions.ts counts them instead.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { fmt, shuffled, table } from './lib/measure.js';

/** The part of autocannon's programmatic API used here (the package ships no types). */
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p99: number };
  non2xx: number;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  pipelining: number;
  duration: number;
}) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const DURATION_S = Number(process.env.BENCH_HTTP_DURATION ?? process.env.SLUICE_BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_HTTP_CONNECTIONS ?? 50);
const WARMUP_S = 2;
/** Comma-separated substrings of `framework/limiter/store` ids to run (the bare framework always runs). */
const ONLY = (process.env.BENCH_HTTP_ONLY ?? '').split(',').filter(Boolean);
const PASSES = (process.env.BENCH_HTTP_PASSES ?? 'allow,reject').split(',') as Pass[];
/** A directory: every server then runs under `node --cpu-prof` and writes its profile there on exit. */
const PROFILE_DIR = process.env.BENCH_HTTP_PROFILE;

type Framework = 'fastify' | 'express';
/**
 * `sluice-x`: sluice sending only the X-RateLimit-* headers, the three the peers send; `headers`: no
 * limiter, the five headers sluice sends by default set to fixed values (what they cost the framework
 * and Node alone). Both for bench/http-instructions.ts.
 */
type Limiter = 'bare' | 'sluice' | 'sluice-x' | 'peer' | 'headers';
type StoreKind = 'memory' | 'redis';
type Pass = 'allow' | 'reject';

interface Variant {
  framework: Framework;
  limiter: Limiter;
  store: StoreKind;
}

/** High enough that nothing is rejected, or low enough that nearly everything is. */
const LIMIT: Record<Pass, number> = { allow: 100_000_000, reject: 100 };
const PEER: Record<Framework, string> = { fastify: '@fastify/rate-limit', express: 'express-rate-limit' };

// ---------------------------------------------------------------- the server side (a child process)

/** The five headers sluice sends by default, with the values of an allowed request here. */
const FIXED_HEADERS = [
  'x-ratelimit-limit',
  '100000000',
  'x-ratelimit-remaining',
  '99999999',
  'x-ratelimit-reset',
  '3600',
  'ratelimit-policy',
  '"default";q=100000000;w=3600',
  'ratelimit',
  '"default";r=99999999;t=3600',
];
const FIXED_HEADER_OBJECT = Object.fromEntries(
  Array.from({ length: FIXED_HEADERS.length / 2 }, (_, i) => [FIXED_HEADERS[2 * i], FIXED_HEADERS[2 * i + 1]]),
);

async function serve(v: Variant, pass: Pass, redisPort: number): Promise<void> {
  const limit = LIMIT[pass];
  const { Redis } = await import('ioredis');
  const redis = v.store === 'redis' ? new Redis(redisPort, '127.0.0.1') : undefined;
  let sluiceStore: import('../packages/sluice/src/stores/store.js').Store | undefined;
  if (redis !== undefined && (v.limiter === 'sluice' || v.limiter === 'sluice-x')) {
    const { createRedisStore } = await import('../packages/sluice/src/stores/redis/index.js');
    sluiceStore = createRedisStore({ client: redis });
  }
  const sluiceOptions = {
    limit,
    period: '1h',
    ...(sluiceStore ? { store: sluiceStore } : {}),
    ...(v.limiter === 'sluice-x' ? { headers: 'x' as const } : {}),
  };
  const isSluice = v.limiter === 'sluice' || v.limiter === 'sluice-x';
  let port: number;
  if (v.framework === 'fastify') {
    const Fastify = (await import('fastify')).default;
    const app = Fastify({ logger: false });
    if (isSluice) {
      const { rateLimit } = await import('../packages/sluice/src/adapters/fastify.js');
      await app.register(rateLimit(sluiceOptions));
    } else if (v.limiter === 'headers') {
      // Stored straight into the reply's header object, as sluice's plugin does (reply.header() costs more).
      let bagKey: symbol | undefined;
      app.addHook('onRequest', (_request, reply, done) => {
        bagKey ??= Object.getOwnPropertySymbols(reply).find((s) => s.description === 'fastify.reply.headers');
        Object.assign((reply as unknown as Record<symbol, object>)[bagKey as symbol] as object, FIXED_HEADER_OBJECT);
        done();
      });
    } else if (v.limiter === 'peer') {
      const peer = (await import('@fastify/rate-limit')).default;
      await app.register(peer, { max: limit, timeWindow: 3_600_000, ...(redis ? { redis } : {}) });
    }
    app.get('/', async () => ({ hello: 'world' }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  } else {
    const express = (await import('express')).default;
    const app = express();
    if (isSluice) {
      const { rateLimit } = await import('../packages/sluice/src/adapters/express.js');
      app.use(rateLimit(sluiceOptions));
    } else if (v.limiter === 'headers') {
      app.use((_req, res, next) => {
        for (let i = 0; i < FIXED_HEADERS.length; i += 2)
          res.setHeader(FIXED_HEADERS[i] as string, FIXED_HEADERS[i + 1] as string);
        next();
      });
    } else if (v.limiter === 'peer') {
      const { rateLimit } = await import('express-rate-limit');
      let store: import('express-rate-limit').Store | undefined;
      if (redis) {
        const { RedisStore } = await import('rate-limit-redis');
        store = new RedisStore({
          sendCommand: (command: string, ...args: string[]) =>
            redis.call(command, ...args) as Promise<import('rate-limit-redis').RedisReply>,
        });
      }
      app.use(rateLimit({ limit, windowMs: 3_600_000, ...(store ? { store } : {}) }));
    }
    app.get('/', (_req, res) => void res.json({ hello: 'world' }));
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as { port: number }).port;
  }
  console.log(`PORT ${port}`);
  // The parent asks for our CPU time with a line `cpu`, and ends us by closing stdin.
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    if (chunk.includes('cpu')) {
      const { user, system } = process.cpuUsage();
      console.log(`CPU ${user + system}`);
    }
  });
  process.stdin.on('end', () => process.exit(0));
}

// ---------------------------------------------------------------- the load side (this process)

interface Measurement {
  rps: number;
  p99: number;
  non2xx: number;
  total: number;
  /** Server CPU time per request, in µs: what the server spent, whatever else ran on the machine. */
  cpuUs: number;
  /** Redis CPU time per request, in µs (Redis shares the machine's cores with the servers). */
  redisUs: number;
}

interface Server {
  port: number;
  child: ChildProcess;
  /** The server's CPU time so far, in µs. */
  cpu(): Promise<number>;
}

async function startServer(v: Variant, pass: Pass, redisPort: number): Promise<Server> {
  const child = spawn(
    process.execPath,
    [
      ...(import.meta.url.endsWith('.ts') ? ['--import', 'tsx'] : []),
      ...(PROFILE_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`]),
      fileURLToPath(import.meta.url),
      'serve',
      v.framework,
      v.limiter,
      v.store,
      pass,
      String(redisPort),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const waiting: ((us: number) => void)[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    lines.on('line', (line) => {
      const p = /^PORT (\d+)$/.exec(line);
      if (p) resolve(Number(p[1]));
      const c = /^CPU (\d+)$/.exec(line);
      if (c) waiting.shift()?.(Number(c[1]));
    });
    child.once('exit', () => reject(new Error(`server ${JSON.stringify(v)} exited before listening`)));
  });
  return {
    port,
    child,
    cpu: () =>
      new Promise<number>((resolve) => {
        waiting.push(resolve);
        child.stdin?.write('cpu\n');
      }),
  };
}

async function stopServer(child: ChildProcess): Promise<void> {
  const exited = once(child, 'exit');
  child.stdin?.end();
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

function load(port: number, duration: number): Promise<AutocannonResult> {
  return autocannon({ url: `http://127.0.0.1:${port}/`, connections: CONNECTIONS, pipelining: 1, duration });
}

/** Redis's own CPU time so far (user + system), in µs, from INFO. */
async function redisCpuUs(admin: import('ioredis').Redis): Promise<number> {
  const info = await admin.info('cpu');
  const num = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return (num('used_cpu_user') + num('used_cpu_sys')) * 1e6;
}

/** One measured window of load on a running server. */
async function measure(server: Server, admin: import('ioredis').Redis): Promise<Measurement> {
  const before = await server.cpu();
  const redisBefore = await redisCpuUs(admin);
  const r = await load(server.port, DURATION_S);
  const requests = Math.max(1, r.requests.total);
  const cpuUs = ((await server.cpu()) - before) / requests;
  const redisUs = ((await redisCpuUs(admin)) - redisBefore) / requests;
  return { rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx, total: r.requests.total, cpuUs, redisUs };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

async function main(): Promise<void> {
  if (process.argv[2] === 'serve') {
    const [framework, limiter, store, pass, redisPort] = process.argv.slice(3) as [
      Framework,
      Limiter,
      StoreKind,
      Pass,
      string,
    ];
    await serve({ framework, limiter, store }, pass, Number(redisPort));
    return;
  }
  const { startRedis } = await import('../test/helpers/redis-server.js');
  const redis = await startRedis();
  const { Redis } = await import('ioredis');
  const admin = new Redis(redis.port, '127.0.0.1');
  const variants: Variant[] = [];
  const wanted = (v: Variant) =>
    ONLY.length === 0 || ONLY.some((x) => `${v.framework}/${v.limiter}/${v.store}`.includes(x));
  for (const framework of ['fastify', 'express'] as const) {
    const ofFramework: Variant[] = [];
    for (const store of ['memory', 'redis'] as const) {
      for (const limiter of ['sluice', 'peer'] as const) {
        const v: Variant = { framework, limiter, store };
        if (wanted(v)) ofFramework.push(v);
      }
    }
    if (ofFramework.length > 0) variants.push({ framework, limiter: 'bare', store: 'memory' }, ...ofFramework);
  }
  const passes = PASSES;
  const results = new Map<string, Measurement[]>();
  const id = (v: Variant, pass: Pass) => `${v.framework}/${v.limiter}/${v.store}/${pass}`;
  try {
    for (const pass of passes) {
      // Every server of the pass runs (idle) at once, and the rounds go through them in turn: the load
      // of anything else on the machine then falls on every variant alike, and the median drops outliers.
      const servers: Server[] = [];
      try {
        for (const v of variants) {
          const server = await startServer(v, pass, redis.port);
          servers.push(server);
          await load(server.port, WARMUP_S);
        }
        for (let round = 1; round <= ROUNDS; round++) {
          // A new order each round: whatever drifts during a round does not always favour the same variant.
          for (const i of shuffled(variants.length)) {
            const v = variants[i] as Variant;
            process.stderr.write(`${pass} round ${round}/${ROUNDS}: ${id(v, pass)} ...`);
            const m = await measure(servers[i] as Server, admin);
            process.stderr.write(
              ` ${fmt(m.rps)} req/s, ${fmt(m.cpuUs, 1)} µs CPU/req, Redis ${fmt(m.redisUs, 1)} µs/req\n`,
            );
            results.set(id(v, pass), [...(results.get(id(v, pass)) ?? []), m]);
          }
        }
      } finally {
        await Promise.all(servers.map((s) => stopServer(s.child)));
      }
    }
  } finally {
    admin.disconnect();
    await redis.stop();
  }

  const get = (v: Variant, pass: Pass) => {
    const ms = results.get(id(v, pass)) ?? [];
    const bare = results.get(id({ framework: v.framework, limiter: 'bare', store: 'memory' }, pass)) ?? [];
    return {
      // The CPU a limiter adds: the median of each round's difference from the bare framework (measured
      // seconds apart), which the machine's drift between rounds moves far less than a difference of medians.
      addedUs: median(ms.map((m, round) => m.cpuUs - (bare[round] as Measurement).cpuUs)),
      rps: median(ms.map((m) => m.rps)),
      p99: median(ms.map((m) => m.p99)),
      rejected: median(ms.map((m) => (m.total === 0 ? 0 : m.non2xx / m.total))),
      cpuUs: median(ms.map((m) => m.cpuUs)),
      redisUs: median(ms.map((m) => m.redisUs)),
    };
  };
  const name = (v: Variant) =>
    v.limiter === 'bare'
      ? `${v.framework} (bare)`
      : `${v.framework} + ${v.limiter === 'sluice' ? 'sluice' : PEER[v.framework]} (${v.store})`;

  console.log(
    `\n### HTTP middleware (autocannon: ${CONNECTIONS} connections, pipelining 1, ${DURATION_S} s per measure after ${WARMUP_S} s warm-up, median of ${ROUNDS} interleaved rounds; the same settings for every variant)\n`,
  );
  for (const pass of passes) {
    const title =
      pass === 'allow'
        ? 'Limits set high: nothing rejected'
        : `Limit ${LIMIT.reject}/hour: nearly every request rejected (429)`;
    console.log(`\n#### ${title}\n`);
    const rows = variants.map((v) => {
      const m = get(v, pass);
      const bare = get({ framework: v.framework, limiter: 'bare', store: 'memory' }, pass);
      return [
        name(v),
        fmt(m.rps),
        fmt(m.p99, 1),
        `${fmt((m.rps / bare.rps) * 100, 1)} %`,
        fmt(m.cpuUs, 1),
        v.limiter === 'bare' ? '' : `${m.addedUs >= 0 ? '+' : ''}${fmt((m.addedUs / bare.cpuUs) * 100, 1)} %`,
        v.store === 'redis' ? fmt(m.redisUs, 1) : '',
        `${fmt(m.rejected * 100, 1)} %`,
      ];
    });
    console.log(
      table(
        [
          'variant',
          'req/s',
          'p99 (ms)',
          'req/s vs bare',
          'server CPU µs/req',
          'CPU/req vs bare',
          'Redis CPU µs/req',
          'answered 429',
        ],
        rows,
      ),
    );
    const pairs = [];
    for (const framework of ['fastify', 'express'] as const) {
      for (const store of ['memory', 'redis'] as const) {
        const sv: Variant = { framework, limiter: 'sluice', store };
        const pv: Variant = { framework, limiter: 'peer', store };
        if (!results.has(id(sv, pass)) || !results.has(id(pv, pass))) continue;
        const s = get(sv, pass);
        const p = get(pv, pass);
        const added = (m: { addedUs: number }) => fmt(m.addedUs, 1);
        pairs.push([
          `${framework}, ${store}`,
          `sluice vs ${PEER[framework]}`,
          `${fmt(s.rps / p.rps, 2)}×`,
          `${fmt(p.cpuUs / s.cpuUs, 2)}×`,
          `${added(s)} / ${added(p)}`,
          `${fmt(s.addedUs / p.addedUs, 2)}×`,
        ]);
      }
    }
    console.log('');
    console.log(
      table(
        [
          'pair',
          '',
          'req/s ratio',
          'CPU per request ratio (peer / sluice)',
          'CPU µs/req added over bare (sluice / peer)',
          'added CPU, sluice / peer',
        ],
        pairs,
      ),
    );
  }
}

await main();
