/**
 * Gateway mode under load: `sluice serve --upstream` in front of a small upstream, against a bare Node
 * reverse proxy (node:http, a keep-alive agent, bodies piped, nothing else) to the same upstream, in the
 * same run. What the gateway's rate limiting costs is read from the ratio of the two: req/s, p99, and
 * the proxy process's own CPU time per request (from /proc), which other load on the machine disturbs
 * far less than throughput.
 *
 *   npm run bench -- gateway
 *   SLUICE_BENCH_SECONDS=2 BENCH_GATEWAY_ROUNDS=3 npm run bench -- gateway    # quicker, noisier
 *   BENCH_GATEWAY_ONLY=memory npm run bench -- gateway      # the bare proxy and the variants named so
 *   BENCH_GATEWAY_BASELINE=/path/to/other/checkout npm run bench -- gateway   # + that checkout's gateway
 *                                                           # (memory store), for a before/after in one run
 *
 * Every process (upstream, proxies, Redis) starts first; then ROUNDS rounds load each proxy in turn with
 * autocannon (this process, same settings for all) and the median is reported, so a burst of background
 * load falls on every variant alike.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startRedis } from '../test/helpers/redis-server.js';
import { fmt, table } from './lib/measure.js';

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

const ROOT = resolve(import.meta.dirname, '..');
const CLI = import.meta.url.endsWith('.ts')
  ? ['--import', 'tsx', resolve(ROOT, 'packages/server/src/cli/main.ts')]
  : [resolve(ROOT, 'packages/server/src/cli/main.js')];
const SECONDS = Number(process.env.SLUICE_BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_GATEWAY_ROUNDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_GATEWAY_CONNECTIONS ?? 50);
const WARMUP_S = 2;
/** Comma-separated substrings of variant names to run besides the bare proxy (e.g. `memory,proxy only`). */
const ONLY = (process.env.BENCH_GATEWAY_ONLY ?? '').split(',').filter(Boolean);
/** Another checkout of sluice whose gateway (rules, memory store) is measured beside this one's. */
const BASELINE = process.env.BENCH_GATEWAY_BASELINE;

/** The upstream: a small JSON answer, as an API would give. */
const UPSTREAM = `
const http = require('node:http');
const body = JSON.stringify({ hello: 'world' });
const server = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
`;

/**
 * The bare reverse proxy: what a Node user writes without a gateway, with the same keep-alive agent
 * settings as sluice's (256 sockets) and the hop-by-hop headers dropped both ways, as a proxy must.
 */
const BARE_PROXY = `
const http = require('node:http');
const upstreamPort = Number(process.argv[1]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);
const strip = (h) => { const out = {}; for (const k in h) if (!HOP.has(k)) out[k] = h[k]; return out; };
const server = http.createServer((req, res) => {
  const headers = strip(req.headers);
  headers['x-forwarded-for'] = req.socket.remoteAddress;
  const out = http.request({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers, agent });
  out.on('response', (r) => { res.writeHead(r.statusCode, strip(r.headers)); r.pipe(res); });
  out.on('error', () => { if (!res.headersSent) { res.writeHead(502); res.end(); } else res.destroy(); });
  req.pipe(out);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
`;

/** Rules for the gateway: one limit per client address (every request here is from 127.0.0.1: a hot key). */
const rules = (requestsPerSecond: number) => `
domain: edge
http:
  rate_limits:
    - actions: [{ remote_address: {} }]
descriptors:
  - key: remote_address
    rate_limit: { unit: second, requests_per_unit: ${requestsPerSecond} }
`;

interface Proc {
  child: ChildProcess;
  port: number;
}

/** Starts a process and reads its port from the first JSON line with `port` (or `proxy`) on stdout. */
function start(argv: string[], portOf: (line: Record<string, unknown>) => number | undefined): Promise<Proc> {
  const child = spawn(process.execPath, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((done, fail) => {
    let out = '';
    const onData = (c: Buffer) => {
      out += c.toString();
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          const port = portOf(JSON.parse(line) as Record<string, unknown>);
          if (port !== undefined) {
            child.stdout?.off('data', onData);
            child.stdout?.resume();
            done({ child, port });
            return;
          }
        } catch {
          // a partial line: wait for the rest
        }
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => fail(new Error(`${argv.slice(0, 3).join(' ')} exited ${code}`)));
  });
}

async function stop(p: Proc): Promise<void> {
  if (p.child.exitCode !== null) return;
  const exited = new Promise((done) => p.child.once('exit', done));
  p.child.kill('SIGTERM');
  await exited;
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Measurement {
  rps: number;
  p99: number;
  non2xx: number;
  total: number;
  cpuUs: number;
}

async function measure(p: Proc, seconds: number): Promise<Measurement> {
  const before = cpuSeconds(p.child.pid as number);
  const r = await autocannon({
    url: `http://127.0.0.1:${p.port}/api/items`,
    connections: CONNECTIONS,
    pipelining: 1,
    duration: seconds,
  });
  const cpuUs = ((cpuSeconds(p.child.pid as number) - before) * 1e6) / Math.max(1, r.requests.total);
  return { rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx, total: r.requests.total, cpuUs };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

const loadBefore = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');
const dir = mkdtempSync(join(tmpdir(), 'sluice-gateway-bench-'));
const redis = await startRedis();
const procs: Proc[] = [];
const variants: { name: string; proc: Proc }[] = [];
try {
  writeFileSync(join(dir, 'allow.yaml'), rules(1_000_000_000));
  writeFileSync(join(dir, 'reject.yaml'), rules(100));
  writeFileSync(join(dir, 'none.yaml'), 'domain: edge\ndescriptors: []\n');
  const upstream = await start(['-e', UPSTREAM], (l) => l.port as number | undefined);
  procs.push(upstream);
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  const sluice = async (name: string, config: string, extra: string[] = [], cli = CLI) => {
    if (ONLY.length > 0 && !ONLY.some((x) => name.includes(x))) return;
    const argv = [
      ...cli,
      'serve',
      '--config',
      join(dir, config),
      '--no-watch',
      '--upstream',
      upstreamUrl,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--grpc-port',
      '0',
      '--proxy-port',
      '0',
      '--log-level',
      'info',
      ...extra,
    ];
    const proc = await start(argv, (l) => (l.msg === 'listening' ? (l.proxy as number) : undefined));
    procs.push(proc);
    variants.push({ name, proc });
  };
  const bare = await start(['-e', BARE_PROXY, String(upstream.port)], (l) => l.port as number | undefined);
  procs.push(bare);
  variants.push({ name: 'bare Node reverse proxy (node:http, keep-alive agent)', proc: bare });
  await sluice('sluice gateway, no http rules (proxy only)', 'none.yaml');
  await sluice('sluice gateway, rules, memory store', 'allow.yaml');
  if (BASELINE !== undefined) {
    await sluice(
      `baseline ${BASELINE}: gateway, rules, memory store`,
      'allow.yaml',
      [],
      // Its compiled build when its own `npm run bench` made one: tsx's transform would cost it alone.
      existsSync(resolve(BASELINE, '.bench-out/packages/server/src/cli/main.js'))
        ? [resolve(BASELINE, '.bench-out/packages/server/src/cli/main.js')]
        : ['--import', 'tsx', resolve(BASELINE, 'packages/server/src/cli/main.ts')],
    );
  }
  await sluice('sluice gateway, rules, Redis store', 'allow.yaml', ['--redis', redis.url, '--redis-timeout', '1s']);
  await sluice('sluice gateway, rules, nearly all rejected (429)', 'reject.yaml');
  const directProc = { name: 'the upstream itself, no proxy', proc: upstream };

  const all = [directProc, ...variants];
  for (const v of all) await measure(v.proc, WARMUP_S);
  const results = new Map<string, Measurement[]>();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const v of all) {
      process.stderr.write(`round ${round}/${ROUNDS}: ${v.name} ...`);
      const m = await measure(v.proc, SECONDS);
      process.stderr.write(` ${fmt(m.rps)} req/s, ${fmt(m.cpuUs, 1)} µs CPU/req\n`);
      results.set(v.name, [...(results.get(v.name) ?? []), m]);
    }
  }
  const get = (name: string) => {
    const ms = results.get(name) ?? [];
    return {
      rps: median(ms.map((m) => m.rps)),
      p99: median(ms.map((m) => m.p99)),
      cpuUs: median(ms.map((m) => m.cpuUs)),
      rejected: median(ms.map((m) => (m.total === 0 ? 0 : m.non2xx / m.total))),
    };
  };
  const base = get(variants[0]?.name as string);
  console.log(
    `autocannon ${CONNECTIONS} connections, pipelining 1, ${SECONDS} s per measure after ${WARMUP_S} s warm-up, ` +
      `median of ${ROUNDS} interleaved rounds; ${cpus().length} cores shared by load generator, proxies, upstream ` +
      `and Redis; load average before the run ${loadBefore}. Rules: one limit per client address ` +
      `(every request comes from 127.0.0.1, so one hot key).\n`,
  );
  console.log(
    table(
      [
        'variant',
        'req/s',
        'p99 (ms)',
        'req/s vs bare proxy',
        'proxy CPU µs/req',
        'CPU/req vs bare proxy',
        'answered 429',
      ],
      all.map((v) => {
        const m = get(v.name);
        return [
          v.name,
          fmt(m.rps),
          fmt(m.p99, 1),
          v === directProc ? '–' : `${fmt((m.rps / base.rps) * 100, 1)} %`,
          v === directProc ? '–' : fmt(m.cpuUs, 1),
          v === directProc ? '–' : `${fmt((m.cpuUs / base.cpuUs) * 100, 1)} %`,
          `${fmt(m.rejected * 100, 1)} %`,
        ];
      }),
    ),
  );
  console.log(
    '\nThe upstream row is the upstream loaded directly (no proxy): the ceiling of every proxied row. "Proxy CPU" is the proxy process alone (the upstream and the load generator excluded).',
  );
} finally {
  await Promise.all(procs.map(stop));
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
