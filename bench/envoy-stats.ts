/**
 * The service in envoy mode with envoy ratelimit's statsd stats on (USE_STATSD, sent to a UDP receiver in
 * this process every STATS_FLUSH_INTERVAL) against off (USE_STATSD=false), same run, alternating
 * off/on/off/on: gRPC decisions/s from `sluice bench` (a child process) against `sluice serve --envoy-compat`,
 * and the service's CPU time per decision (from /proc), which a busy machine disturbs less.
 *
 *   NODE_OPTIONS=--conditions=sluice-source node --import tsx bench/envoy-stats.ts
 *   SLUICE_BENCH_SECONDS=8 NODE_OPTIONS=--conditions=sluice-source node --import tsx bench/envoy-stats.ts
 */
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fmt, table } from './lib/measure.js';
import { cpuSeconds } from './lib/proc-cpu.js';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = ['--import', 'tsx', resolve(ROOT, 'packages/server/src/cli/main.ts')];
const SECONDS = Number(process.env.SLUICE_BENCH_SECONDS ?? 5);
const RULES = `domain: example
descriptors:
  - key: remote_address
    rate_limit: { unit: second, requests_per_unit: 100 }
`;

function run(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      err += c;
    });
    child.once('close', (code) => (code === 0 ? done(out) : fail(new Error(err))));
  });
}

/** `sluice serve --envoy-compat` with `env`; resolves with its gRPC port and a stop. */
async function serve(env: Record<string, string>): Promise<{ pid: number; grpc: number; stop(): Promise<void> }> {
  const argv = [...CLI, 'serve', '--envoy-compat', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0'];
  const child = spawn(process.execPath, [...argv, '--log-level', 'info'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const grpc = await new Promise<number>((done, fail) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line !== undefined) done(JSON.parse(line).grpc as number);
    });
    child.once('exit', (code) => fail(new Error(`sluice serve exited ${code}`)));
  });
  return {
    pid: child.pid as number,
    grpc,
    stop: () =>
      new Promise((done) => {
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

/** decisions/s, and the service's CPU µs per decision (which the load generator's share of the cores does not change). */
async function measure(service: { pid: number; grpc: number }, seconds: number): Promise<[number, number]> {
  const args = [
    ...CLI,
    'bench',
    '--json',
    '--grpc',
    `127.0.0.1:${service.grpc}`,
    '--connections',
    '4',
    '--threads',
    '2',
  ];
  await run([...args, '--duration', '2s', '--warmup', '0s']);
  const before = cpuSeconds(service.pid);
  const out = await run([...args, '--duration', `${seconds}s`, '--warmup', '0s']);
  const used = cpuSeconds(service.pid) - before;
  const r = JSON.parse(out.trim().split('\n').at(-1) as string) as { decisions: number; decisionsPerS: number };
  return [r.decisionsPerS, (used * 1e6) / Math.max(1, r.decisions)];
}

const base = mkdtempSync(join(tmpdir(), 'sluice-envoy-stats-'));
mkdirSync(join(base, 'ratelimit/config'), { recursive: true });
writeFileSync(join(base, 'ratelimit/config/example.yaml'), RULES);
const receiver = createSocket('udp4');
let lines = 0;
receiver.on('message', (m) => {
  lines += m.toString().split('\n').length;
});
await new Promise<void>((done) => receiver.bind(0, '127.0.0.1', done));
const common = { RUNTIME_ROOT: base, RUNTIME_SUBDIRECTORY: 'ratelimit', RUNTIME_WATCH_ROOT: 'false' };
const modes = {
  off: { ...common, USE_STATSD: 'false' },
  on: { ...common, STATSD_HOST: '127.0.0.1', STATSD_PORT: String(receiver.address().port), STATS_FLUSH_INTERVAL: '1s' },
};
const results: Record<'off' | 'on', number[]> = { off: [], on: [] };
const cpu: Record<'off' | 'on', number[]> = { off: [], on: [] };
try {
  for (const mode of ['off', 'on', 'off', 'on'] as const) {
    const service = await serve(modes[mode]);
    try {
      const [rate, us] = await measure(service, SECONDS);
      results[mode].push(rate);
      cpu[mode].push(us);
    } finally {
      await service.stop();
    }
  }
} finally {
  receiver.close();
  rmSync(base, { recursive: true, force: true });
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(
  table(
    ['envoy mode, gRPC, memory', 'decisions/s (each run)', 'mean', 'service CPU µs/decision (mean)'],
    (['off', 'on'] as const).map((m) => [
      m === 'off' ? 'USE_STATSD=false' : 'USE_STATSD=true (UDP, 1s flush)',
      results[m].map((x) => fmt(x)).join(', '),
      fmt(mean(results[m])),
      fmt(mean(cpu[m]), 1),
    ]),
  ),
);
console.log(
  `statsd on / off: decisions/s ${(mean(results.on) / mean(results.off)).toFixed(3)}, CPU per decision ${(mean(cpu.on) / mean(cpu.off)).toFixed(3)}; statsd lines received: ${lines}`,
);
