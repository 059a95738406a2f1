/**
 * A flood of distinct 1 KB keys through `POST /json` against `sluice serve` on the memory store (issue 12):
 * the service's peak RSS, a steady client's decisions/s before the flood and during it, the flood's own
 * decisions/s, and the size of `/metrics` afterwards. The load generator is this process, on the same
 * cores as the service, so the decisions/s are comparable only within one run.
 *
 *   npm run bench -- key-flood                     # 5,000,000 keys (or SLUICE_FLOOD_SECONDS, whichever first)
 *   SLUICE_FLOOD_KEYS=1000000 npm run bench -- key-flood
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fmt, table } from './lib/measure.js';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = import.meta.url.endsWith('.ts')
  ? ['--import', 'tsx', resolve(ROOT, 'packages/server/src/cli/main.ts')]
  : [resolve(ROOT, 'packages/server/src/cli/main.js')];
const KEYS = Number(process.env.SLUICE_FLOOD_KEYS ?? 5_000_000);
/** The flood stops at KEYS or after this long, whichever comes first (the table says which). */
const MAX_SECONDS = Number(process.env.SLUICE_FLOOD_SECONDS ?? 600);
const STEADY_SECONDS = Number(process.env.SLUICE_BENCH_SECONDS ?? 10);
const BATCH = 500;
const FLOODERS = 3;
const STEADY = 2;
const KEY_BYTES = 1024;

const CONFIG = `domain: flood
descriptors:
  - key: k
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: steady
    rate_limit: { unit: second, requests_per_unit: 100000000 }
`;

interface Service {
  pid: number;
  http: number;
  stop(): Promise<void>;
}

async function serve(config: string): Promise<Service> {
  const child = spawn(
    process.execPath,
    [...CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', '--config', config, '--no-watch'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const http = await new Promise<number>((done, fail) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) done((JSON.parse(line) as { http: number }).http);
    });
    child.once('exit', (code) => fail(new Error(`sluice serve exited ${code}`)));
  });
  child.stdout.resume();
  return {
    pid: child.pid as number,
    http,
    stop: () =>
      new Promise((done) => {
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

async function post(port: number, body: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

/** A steady client: batches of 100 decisions on 100 fixed keys, counted until `until()` is false. */
async function steady(port: number, until: () => boolean): Promise<{ decisions: number; seconds: number }> {
  const body = JSON.stringify({
    domain: 'flood',
    descriptors: Array.from({ length: 100 }, (_, i) => ({ entries: [{ key: 'steady', value: `s${i}` }] })),
  });
  const started = performance.now();
  let decisions = 0;
  await Promise.all(
    Array.from({ length: STEADY }, async () => {
      while (until()) {
        if ((await post(port, body)) === 200) decisions += 100;
      }
    }),
  );
  return { decisions, seconds: (performance.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-flood-'));
  const config = join(dir, 'flood.yaml');
  writeFileSync(config, CONFIG);
  const service = await serve(config);
  try {
    const idle = memory(service.pid);
    let deadline = performance.now() + STEADY_SECONDS * 1000;
    const before = await steady(service.http, () => performance.now() < deadline);

    const pad = 'x'.repeat(KEY_BYTES - 12);
    let next = 0;
    let flooded = 0;
    let refused = 0;
    let peakRss = 0;
    const floodStart = performance.now();
    const stopAt = floodStart + MAX_SECONDS * 1000;
    let flooding = true;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, memory(service.pid).rss);
      process.stdout.write(`\rflood: ${fmt(flooded)} keys, RSS ${fmt(peakRss / 2 ** 20)} MB   `);
    }, 1000);
    const flood = Promise.all(
      Array.from({ length: FLOODERS }, async () => {
        while (next < KEYS && performance.now() < stopAt) {
          const first = next;
          next += BATCH;
          const descriptors = Array.from({ length: BATCH }, (_, i) => ({
            entries: [{ key: 'k', value: `${pad}${String(first + i).padStart(12, '0')}` }],
          }));
          const status = await post(service.http, JSON.stringify({ domain: 'flood', descriptors }));
          if (status === 200 || status === 429) flooded += BATCH;
          else refused += BATCH;
        }
      }),
    ).then(() => {
      flooding = false;
    });
    const during = await steady(service.http, () => flooding);
    await flood;
    clearInterval(sampler);
    process.stdout.write('\n');
    const floodSeconds = (performance.now() - floodStart) / 1000;
    const metricsStarted = performance.now();
    const metrics = await (await fetch(`http://127.0.0.1:${service.http}/metrics`)).text();
    const metricsMs = performance.now() - metricsStarted;
    deadline = performance.now() + STEADY_SECONDS * 1000;
    const afterwards = await steady(service.http, () => performance.now() < deadline);
    const peak = Math.max(peakRss, memory(service.pid).peak);
    const rate = (r: { decisions: number; seconds: number }) => r.decisions / r.seconds;

    console.log(
      `\n${fmt(flooded)} distinct ${KEY_BYTES}-byte keys in ${fmt(floodSeconds, 1)} s` +
        (flooded < KEYS ? ` (stopped at SLUICE_FLOOD_SECONDS=${MAX_SECONDS}; ${fmt(KEYS)} asked)` : '') +
        (refused > 0 ? `, ${fmt(refused)} refused` : '') +
        ` — memory store, ${FLOODERS} flooding + ${STEADY} steady connections, batches of ${BATCH}\n`,
    );
    console.log(
      table(
        ['measure', 'value'],
        [
          ['service RSS idle', `${fmt(idle.rss / 2 ** 20)} MB`],
          ['service peak RSS (VmHWM)', `${fmt(peak / 2 ** 20)} MB`],
          ['flood decisions/s', fmt(flooded / floodSeconds)],
          ['steady client decisions/s before', fmt(rate(before))],
          ['steady client decisions/s during', `${fmt(rate(during))} (${fmt(rate(during) / rate(before), 2)}×)`],
          ['steady client decisions/s after', `${fmt(rate(afterwards))} (${fmt(rate(afterwards) / rate(before), 2)}×)`],
          ['/metrics size after', `${fmt(Buffer.byteLength(metrics))} bytes (${fmt(metricsMs)} ms)`],
        ],
      ),
    );
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
