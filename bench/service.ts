/**
 * The service under load: `sluice bench` (a child process, as a user runs it) against `sluice serve`
 * (another child process), over gRPC and HTTP, on the memory store and on Redis. Both share this
 * machine's cores, so besides decisions/s and latency it reports the service's own CPU time per decision
 * (from /proc), which does not depend on how much CPU the load generator took.
 *
 * gRPC runs on @grpc/grpc-js, ShouldRateLimit answered on its lean path. With h2load installed, the gRPC
 * rows run twice more:
 * saturated (as many calls as the service answers, 64 in flight) and at a fixed offered rate (h2load
 * `--rps`, 20,000 calls/s by default, still at most 64 in flight), where the latency is that of a service
 * that keeps up rather than of a queue.
 *
 *   node --import tsx bench/service.ts                 # 10 s per run, 64 in flight
 *   SLUICE_BENCH_SECONDS=5 node --import tsx bench/service.ts
 *   SLUICE_BENCH_RATE=20000 SLUICE_BENCH_ONLY=h2load node --import tsx bench/service.ts   # rows whose name has it
 *   BENCH_SERVICE_BASELINE=/path/to/other/checkout npm run bench -- service   # + that checkout's gRPC rows,
 *                                                  # for a before/after in one run (its `npm run bench` build)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { encodeRateLimitRequestFrame } from '../packages/server/src/rls/wire.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { fmt, table } from './lib/measure.js';
import { cpuSeconds } from './lib/proc-cpu.js';

const ROOT = resolve(import.meta.dirname, '..');
/** The CLI as this file runs: compiled (npm run bench) or from source through tsx. */
const CLI = import.meta.url.endsWith('.ts')
  ? ['--import', 'tsx', resolve(ROOT, 'packages/server/src/cli/main.ts')]
  : [resolve(ROOT, 'packages/server/src/cli/main.js')];
const SECONDS = Number(process.env.SLUICE_BENCH_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.SLUICE_BENCH_CONCURRENCY ?? 64);
/** Load threads of `sluice bench`: two, so one event loop of the load generator is not the ceiling. */
const THREADS = Number(process.env.SLUICE_BENCH_THREADS ?? 2);
/** The offered rate of the fixed-rate h2load rows, calls per second. */
const RATE = Number(process.env.SLUICE_BENCH_RATE ?? 20_000);
/** Only the scenarios whose name contains this. */
const ONLY = process.env.SLUICE_BENCH_ONLY;
/** Another checkout whose service is measured beside this one's (built by its own `npm run bench`, else from source). */
const BASELINE = process.env.BENCH_SERVICE_BASELINE;
const BASELINE_CLI =
  BASELINE === undefined
    ? undefined
    : existsSync(resolve(BASELINE, '.bench-out/packages/server/src/cli/main.js'))
      ? [resolve(BASELINE, '.bench-out/packages/server/src/cli/main.js')]
      : ['--import', 'tsx', resolve(BASELINE, 'packages/server/src/cli/main.ts')];

interface Service {
  pid: number;
  http: number;
  grpc: number;
  /** Garbage collections so far (`--trace-gc`): young-generation scavenges and full mark-compacts. */
  gcs(): { young: number; full: number };
  stop(): Promise<void>;
}

/**
 * Node's HTTP/2 floor: a server that answers every ShouldRateLimit with the same fixed OK response,
 * speaking the same wire protocol and doing nothing else. What no Node gRPC service can beat here.
 */
const FLOOR = `
const http2 = require('node:http2');
const frame = Buffer.from([0, 0, 0, 0, 2, 8, 1]);
const server = http2.createServer();
server.on('stream', (stream) => {
  stream.on('data', () => {});
  stream.on('end', () => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(frame);
  });
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ msg: 'listening', http: 0, grpc: server.address().port })));
process.on('SIGTERM', () => process.exit(0));
`;

async function serve(args: string[]): Promise<Service> {
  // --trace-gc prints a line per collection on stdout: the rows count them (what sets the tail latency).
  const cli = args[0] === 'baseline' ? (BASELINE_CLI as string[]) : CLI;
  if (args[0] === 'baseline') args = args.slice(1);
  const program =
    args[0] === 'floor'
      ? ['-e', FLOOR]
      : [...cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', '--log-level', 'info', ...args];
  const argv = ['--trace-gc', ...program];
  const child = spawn(process.execPath, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] });
  const ports = await new Promise<{ http: number; grpc: number }>((done, fail) => {
    let out = '';
    const onData = (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line === undefined) return;
      child.stdout.off('data', onData);
      done(JSON.parse(line));
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => fail(new Error(`sluice serve exited ${code}`)));
  });
  const gcs = { young: 0, full: 0 };
  let partial = '';
  child.stdout.on('data', (c: Buffer) => {
    const lines = (partial + c.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.includes(': Scavenge')) gcs.young++;
      else if (line.includes(': Mark-Compact')) gcs.full++;
    }
  });
  return {
    pid: child.pid as number,
    ...ports,
    gcs: () => ({ ...gcs }),
    stop: () =>
      new Promise((done) => {
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

interface BenchJson {
  decisions: number;
  decisionsPerS: number;
  errors: number;
  latencyMs: { p50: number; p99: number };
}

/**
 * Runs a load generator to its end without blocking this process: the service writes a line per
 * garbage collection to the pipe this process reads, and with the event loop blocked (spawnSync) the
 * pipe filled during a run on an idle machine — the service then stopped in its write, and the run
 * never ended.
 */
function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string } = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('close', (status) => done({ status, stdout, stderr }));
  });
}

async function bench(args: string[], seconds: number): Promise<BenchJson> {
  const result = await run(
    process.execPath,
    [
      ...CLI,
      'bench',
      '--json',
      '--duration',
      `${seconds}s`,
      '--threads',
      String(THREADS),
      '--warmup',
      '0s',
      '--concurrency',
      String(CONCURRENCY),
      ...args,
    ],
    { cwd: ROOT },
  );
  if (result.status !== 0) throw new Error(`sluice bench failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1) as string) as BenchJson;
}

interface Row {
  name: string;
  result: BenchJson;
  cpuUsPerDecision: number;
  /** Collections per 10,000 decisions during the measured run. */
  youngPer10k: number;
  fullPer10k: number;
}

/**
 * nghttp2's h2load (C; Debian package nghttp2-client), when installed: a load generator that costs far
 * less CPU per call than any Node client, so more of the two cores go to the service. It sends one fixed
 * request (one key, so most answers are OVER_LIMIT: the same work per decision) and does not read gRPC
 * trailers; `sluice bench` checks those. Latencies come from its per-request log.
 */
const H2LOAD = ['/usr/bin/h2load', '/usr/local/bin/h2load'].find((p) => existsSync(p));

/** Runs h2load for `seconds`: as fast as the service answers, or at `rate` calls per second offered. */
async function h2load(s: Service, seconds: number, rate?: number): Promise<BenchJson> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-h2load-'));
  try {
    const request = join(dir, 'request.bin');
    writeFileSync(
      request,
      encodeRateLimitRequestFrame({
        domain: 'example',
        descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.0.1' }] }],
      }),
    );
    const log = join(dir, 'requests.log');
    const result = await run(H2LOAD as string, [
      '-D',
      String(seconds),
      '-c',
      '1',
      '-m',
      String(CONCURRENCY),
      '-d',
      request,
      '-H',
      'content-type: application/grpc',
      '-H',
      'te: trailers',
      `--log-file=${log}`,
      // One client: its rate is the offered rate (calls still wait for one of the 64 streams).
      ...(rate === undefined ? [] : [`--rps=${rate}`]),
      `http://127.0.0.1:${s.grpc}/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`,
    ]);
    if (result.status !== 0) throw new Error(`h2load failed: ${result.stderr}`);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    const ms = Float64Array.from(lines, (l) => Number(l.split('\t')[2]) / 1000).sort();
    const q = (p: number) => ms[Math.min(ms.length - 1, Math.ceil(p * ms.length) - 1)] ?? 0;
    const failed = lines.filter((l) => l.split('\t')[1] !== '200').length;
    return {
      decisions: ms.length,
      decisionsPerS: Math.round(ms.length / seconds),
      errors: failed,
      latencyMs: { p50: q(0.5), p99: q(0.99) },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function scenario(
  name: string,
  serveArgs: string[],
  benchArgs: (s: Service) => string[],
  generator: 'sluice' | 'h2load' | { rate: number } = 'sluice',
): Promise<Row | undefined> {
  if (ONLY !== undefined && !name.includes(ONLY)) return undefined;
  const service = await serve(serveArgs);
  const load = (seconds: number) =>
    generator === 'sluice'
      ? bench(benchArgs(service), seconds)
      : h2load(service, seconds, generator === 'h2load' ? undefined : generator.rate);
  try {
    await load(2); // warm up the JIT and the connections' peers
    // Lines printed during the warm-up may still be on their way through the pipe.
    await new Promise((done) => setTimeout(done, 200));
    const before = cpuSeconds(service.pid);
    const gcBefore = service.gcs();
    const result = await load(SECONDS);
    const used = cpuSeconds(service.pid) - before;
    // Lines printed during the run may still be on their way through the pipe.
    await new Promise((done) => setTimeout(done, 200));
    const gcAfter = service.gcs();
    const per10k = (n: number) => (n * 10_000) / Math.max(1, result.decisions);
    return {
      name,
      result,
      cpuUsPerDecision: (used * 1e6) / Math.max(1, result.decisions),
      youngPer10k: per10k(gcAfter.young - gcBefore.young),
      fullPer10k: per10k(gcAfter.full - gcBefore.full),
    };
  } finally {
    await service.stop();
  }
}

const loadBefore = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');
const redis = await startRedis();
const rows: (Row | undefined)[] = [];
try {
  // Several connections, as Envoy opens one per worker thread.
  const grpc = (s: Service) => ['--grpc', `127.0.0.1:${s.grpc}`, '--connections', '4'];
  const json = (s: Service) => ['--http', `http://127.0.0.1:${s.http}`, '--endpoint', 'json'];
  const check = (s: Service) => ['--http', `http://127.0.0.1:${s.http}`, '--endpoint', 'check'];
  rows.push(await scenario('gRPC, memory (the default server)', [], grpc));
  if (BASELINE_CLI !== undefined) rows.push(await scenario('baseline: gRPC, memory', ['baseline'], grpc));
  rows.push(await scenario("gRPC floor: Node's HTTP/2 answering a fixed OK", ['floor'], grpc));
  rows.push(await scenario('HTTP /json, memory', [], json));
  rows.push(await scenario('HTTP /v1/check, memory', [], check));
  rows.push(await scenario('gRPC, Redis', ['--redis', redis.url, '--redis-timeout', '1s'], grpc));
  if (H2LOAD !== undefined) {
    rows.push(await scenario('gRPC, memory — load from h2load', [], grpc, 'h2load'));
    if (BASELINE_CLI !== undefined) {
      rows.push(await scenario('baseline: gRPC, memory — load from h2load', ['baseline'], grpc, 'h2load'));
    }
    rows.push(await scenario('gRPC floor — load from h2load', ['floor'], grpc, 'h2load'));
    const fixed = { rate: RATE };
    const at = `h2load at a fixed ${fmt(RATE)}/s`;
    rows.push(await scenario(`gRPC, memory — ${at}`, [], grpc, fixed));
    if (BASELINE_CLI !== undefined)
      rows.push(await scenario(`baseline: gRPC, memory — ${at}`, ['baseline'], grpc, fixed));
    rows.push(await scenario(`gRPC floor — ${at}`, ['floor'], grpc, fixed));
    rows.push(
      await scenario(
        'gRPC, Redis — load from h2load (one key: the local over-limit cache answers)',
        ['--redis', redis.url, '--redis-timeout', '1s'],
        grpc,
        'h2load',
      ),
    );
  }
  rows.push(await scenario('HTTP /json, Redis', ['--redis', redis.url, '--redis-timeout', '1s'], json));
} finally {
  await redis.stop();
}

const ran = rows.filter((r): r is Row => r !== undefined);
// The first row run is the ratios' base (the default server's, unless SLUICE_BENCH_ONLY left it out).
const base = ran[0] ?? ({ result: { decisionsPerS: 1 } } as Row);
console.log(
  `sluice bench (${THREADS} load threads) against sluice serve: ${SECONDS} s per run, ${CONCURRENCY} requests in flight, ${cpus().length} cores shared by both (${cpus()[0]?.model ?? 'cpu'}); load average before the run ${loadBefore}.\n`,
);
console.log(
  table(
    [
      'scenario',
      'decisions/s',
      'p50 ms',
      'p99 ms',
      'errors',
      'service CPU µs/decision',
      'decisions per service CPU-s',
      'GCs per 10k decisions: young / full',
      'decisions/s vs gRPC memory',
    ],
    ran.map((r) => [
      r.name,
      fmt(r.result.decisionsPerS),
      fmt(r.result.latencyMs.p50, 2),
      fmt(r.result.latencyMs.p99, 2),
      fmt(r.result.errors),
      fmt(r.cpuUsPerDecision, 1),
      fmt(1e6 / r.cpuUsPerDecision),
      `${fmt(r.youngPer10k, 1)} / ${fmt(r.fullPer10k, 2)}`,
      `${fmt(r.result.decisionsPerS / base.result.decisionsPerS, 2)}×`,
    ]),
  ),
);
