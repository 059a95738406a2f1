/**
 * Allow/deny lists at their documented maximum (100,000 entries): how long adding them takes, in
 * process and through the admin API of a running `sluice serve`, and what they cost `/json` — decisions
 * per second with 0 entries vs 100,000 (the goal: within 10%). The entries are a mix of every kind the
 * lists hold (IPv4 addresses, IPv4 and IPv6 blocks of several prefix lengths, exact keys), none of which
 * matches the load, so every decision is still made by the limiter and both runs do the same work.
 * The load's descriptor values are IPv4 addresses, so each decision looks up the block table too.
 *
 *   npm run bench -- access-lists
 *   SLUICE_BENCH_SECONDS=5 node --import tsx bench/access-lists.ts
 */
import { spawn, spawnSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { resolve } from 'node:path';
import { createAccessLists } from '../packages/server/src/index.js';
import { fmt, table } from './lib/measure.js';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = import.meta.url.endsWith('.ts')
  ? ['--import', 'tsx', resolve(ROOT, 'packages/server/src/cli/main.ts')]
  : [resolve(ROOT, 'packages/server/src/cli/main.js')];
const SECONDS = Number(process.env.SLUICE_BENCH_SECONDS ?? 10);
const ENTRIES = 100_000;
const TOKEN = 'bench-admin-token-0123456789abcdef';

/** The i-th entry: a spread over every kind and several prefix lengths. */
function entry(i: number): { value: string; key?: string } {
  const a = (i >> 8) & 255;
  const b = i & 255;
  switch (i % 5) {
    case 0:
      return { value: `172.${16 + (i % 16)}.${a}.${b}` };
    case 1:
      return { value: `198.${a}.${b}.0/24` };
    case 2:
      return { value: `2001:db8:${a.toString(16)}:${b.toString(16)}::/64` };
    case 3:
      return { value: `2001:db8:ffff::${i.toString(16)}` };
    default:
      return { value: `leaked-key-${i}`, key: 'api_key' };
  }
}

interface Service {
  http: number;
  stop(): Promise<void>;
}

async function serve(): Promise<Service> {
  const child = spawn(
    process.execPath,
    [...CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', '--log-level', 'info'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, SLUICE_ADMIN_TOKEN: TOKEN } },
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
    http,
    stop: () =>
      new Promise((done) => {
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

/** Adds every entry through `POST /admin/lists/deny`, 32 requests in flight on keep-alive sockets. */
async function addOverAdmin(port: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const post = (body: string) =>
    new Promise<void>((done, fail) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/admin/lists/deny',
          method: 'POST',
          agent,
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 201 ? done() : fail(new Error(`admin answered ${res.statusCode}`))));
        },
      );
      req.on('error', fail);
      req.end(body);
    });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < ENTRIES) await post(JSON.stringify(entry(next++)));
    }),
  );
  agent.destroy();
  return (performance.now() - started) / 1000;
}

function decisionsPerS(port: number): number {
  const run = spawnSync(
    process.execPath,
    [
      ...CLI,
      'bench',
      '--json',
      '--http',
      `http://127.0.0.1:${port}`,
      '--endpoint',
      'json',
      '--duration',
      `${SECONDS}s`,
      '--warmup',
      '2s',
      '--threads',
      '2',
      '--concurrency',
      '64',
      // IPv4 addresses (10.9.9.0-249): each decision also looks the address up among the blocks.
      '--descriptor',
      'remote_address=10.9.9.',
      '--keys',
      '250',
    ],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`sluice bench failed: ${run.stderr}`);
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1) as string) as {
    decisionsPerS: number;
    errors: number;
  };
  if (result.errors > 0) throw new Error(`sluice bench saw ${result.errors} errors`);
  return result.decisionsPerS;
}

// In process: the lists alone.
const lists = createAccessLists();
let started = performance.now();
for (let i = 0; i < ENTRIES; i++) lists.add('deny', entry(i));
const inProcessS = (performance.now() - started) / 1000;
started = performance.now();
let matched = 0;
for (let i = 0; i < 1_000_000; i++) if (lists.match('example', 'remote_address', `10.9.9.${i % 250}`)) matched++;
const matchNs = ((performance.now() - started) * 1e6) / 1_000_000;
if (matched !== 0) throw new Error('the load must not match any entry');

// The service: /json with empty lists, then with 100,000 entries added over the admin API.
const service = await serve();
let empty: number;
let full: number;
let adminS: number;
try {
  empty = decisionsPerS(service.http);
  adminS = await addOverAdmin(service.http);
  full = decisionsPerS(service.http);
} finally {
  await service.stop();
}

console.log(
  `${fmt(ENTRIES)} deny entries (IPv4 addresses, IPv4 /24 and IPv6 /64 blocks, IPv6 addresses, keys); /json load from sluice bench (2 threads, 64 in flight, ${SECONDS} s, remote_address values that match no entry).\n`,
);
console.log(
  table(
    ['measure', 'value'],
    [
      [`add ${fmt(ENTRIES)} entries in process (createAccessLists)`, `${fmt(inProcessS, 2)} s`],
      [`add ${fmt(ENTRIES)} entries over POST /admin/lists/deny (32 in flight)`, `${fmt(adminS, 1)} s`],
      [`match one address against ${fmt(ENTRIES)} entries (in process)`, `${fmt(matchNs)} ns`],
      ['/json decisions/s, 0 entries', fmt(empty)],
      [`/json decisions/s, ${fmt(ENTRIES)} entries`, fmt(full)],
      ['ratio (goal ≥ 0.90)', `${fmt(full / empty, 2)}×`],
    ],
  ),
);
