/**
 * What a rate-limit middleware adds to each request, counted in instructions rather than timed: the
 * servers of bench/http.ts (memory store, limits set high) run under valgrind's callgrind, and the
 * instructions the server process executes for 10,000 requests, after 40,000 to warm up, are divided by
 * the requests. Counts do not drift with the machine's load the way CPU time does on a shared 2-core
 * machine (bench/http.ts's CPU times move by half between rounds minutes apart), so a difference of a
 * few hundred instructions a request shows, and repeats to within about 1 %.
 *
 *   npm run bench -- http-instructions           # needs valgrind (apt-get install valgrind)
 *   BENCH_INSTR_ONLY=fastify npm run bench -- http-instructions
 *
 * Counted: user-space instructions of the whole server process (JavaScript, V8, Node, libuv), not the
 * kernel's (the socket calls are the same for every variant). The client is a keep-alive Node HTTP
 * client on 10 sockets, in this process, outside valgrind; it keeps its connections from the warm-up
 * to the end, so no connection is opened or closed while counting (a new connection sends V8 back to
 * compiling Node's socket code, thousands of instructions a request in a window this short).
 * `--single-threaded`: V8 then compiles and collects garbage on the counted thread, and every
 * instruction is counted. Run it on an otherwise idle machine all the same: V8 starts extra full
 * collections when a process allocates slowly in wall-clock terms, and under valgrind beside other
 * load one server can count a third more (seen once, beside a test run).
 *
 * Rows: the bare framework; sluice with its default headers (the five of docs/middleware.md: X-RateLimit-* and the
 * draft's RateLimit-Policy and RateLimit); sluice with `headers: 'x'`, the three the peers send; the
 * peer (@fastify/rate-limit, express-rate-limit); and no limiter but the same five headers with fixed
 * values, what the headers alone cost the framework and Node.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { fmt, table } from './lib/measure.js';

const WARM = Number(process.env.BENCH_INSTR_WARM ?? 40_000);
const COUNTED = Number(process.env.BENCH_INSTR_REQUESTS ?? 10_000);
const SOCKETS = 10;
/** Comma-separated substrings of `framework/limiter` ids to run (the bare framework always runs). */
const ONLY = (process.env.BENCH_INSTR_ONLY ?? '').split(',').filter(Boolean);

type Framework = 'fastify' | 'express';
type Limiter = 'bare' | 'sluice' | 'sluice-x' | 'peer' | 'headers';
const LIMITERS: readonly Limiter[] = ['bare', 'sluice', 'sluice-x', 'peer', 'headers'];
const PEER: Record<Framework, string> = { fastify: '@fastify/rate-limit', express: 'express-rate-limit' };

function hasValgrind(): boolean {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Sends `count` GET requests over the agent's sockets, SOCKETS at a time; fails on any non-200. */
async function load(port: number, agent: Agent, count: number): Promise<void> {
  let left = count;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
        res.resume();
        res.on('end', resolve);
      }).on('error', reject);
    });
  const worker = async () => {
    while (left > 0) {
      left--;
      await one();
    }
  };
  await Promise.all(Array.from({ length: SOCKETS }, worker));
}

/** Instructions per request of one server variant. */
async function countInstructions(framework: Framework, limiter: Limiter): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-callgrind-'));
  const server = fileURLToPath(new URL('./http.js', import.meta.url));
  const child: ChildProcess = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${join(dir, 'out.%p')}`,
      process.execPath,
      '--single-threaded',
      server,
      'serve',
      framework,
      limiter,
      'memory',
      'allow',
      '0',
    ],
    { stdio: ['pipe', 'pipe', 'ignore'] },
  );
  const agent = new Agent({ keepAlive: true, maxSockets: SOCKETS });
  try {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const port = await new Promise<number>((resolve, reject) => {
      lines.on('line', (line) => {
        const p = /^PORT (\d+)$/.exec(line);
        if (p) resolve(Number(p[1]));
      });
      child.once('exit', () => reject(new Error(`${framework}/${limiter} exited before listening`)));
    });
    await load(port, agent, WARM);
    execFileSync('callgrind_control', ['--zero', String(child.pid)], { stdio: 'ignore' });
    await load(port, agent, COUNTED);
    execFileSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'ignore' });
    // The dump made on request is the file with a part number (out.<pid>.1); its totals line counts
    // everything since the zeroing.
    const dump = readdirSync(dir).find((f) => /\.\d+\.\d+$/.test(f));
    const text = dump === undefined ? '' : readFileSync(join(dir, dump), 'utf8');
    const total = /^(?:totals|summary): (\d+)/m.exec(text);
    if (total === null) throw new Error(`${framework}/${limiter}: no callgrind totals in ${dir}`);
    return Number(total[1]) / COUNTED;
  } finally {
    agent.destroy();
    child.stdin?.end();
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (!hasValgrind()) {
    console.log('bench/http-instructions.ts: skipped, valgrind is not installed (apt-get install valgrind)');
    return;
  }
  const ids: [Framework, Limiter][] = [];
  for (const framework of ['fastify', 'express'] as const) {
    const wanted = LIMITERS.filter(
      (l) => l === 'bare' || ONLY.length === 0 || ONLY.some((x) => `${framework}/${l}`.includes(x)),
    );
    if (wanted.length > 1) for (const l of wanted) ids.push([framework, l]);
  }
  // Two at a time: each server is one thread under valgrind, and the counts do not depend on timing.
  const counts = new Map<string, number>();
  for (let i = 0; i < ids.length; i += 2) {
    await Promise.all(
      ids.slice(i, i + 2).map(async ([framework, limiter]) => {
        const perRequest = await countInstructions(framework, limiter);
        process.stderr.write(`${framework}/${limiter}: ${fmt(perRequest)} instructions/request\n`);
        counts.set(`${framework}/${limiter}`, perRequest);
      }),
    );
  }

  const name = (framework: Framework, limiter: Limiter) =>
    ({
      bare: `${framework} (bare)`,
      sluice: `${framework} + sluice (default headers: five)`,
      'sluice-x': `${framework} + sluice (headers: 'x', three)`,
      peer: `${framework} + ${PEER[framework]} (three headers)`,
      headers: `${framework} + sluice's five headers, fixed values, no limiter`,
    })[limiter];
  console.log(
    `\n### Instructions per request (callgrind, ${fmt(COUNTED)} requests after ${fmt(WARM)}, memory store, nothing rejected)\n`,
  );
  const rows: string[][] = [];
  for (const [framework, limiter] of ids) {
    const n = counts.get(`${framework}/${limiter}`) as number;
    const bare = counts.get(`${framework}/bare`) as number;
    const peer = counts.get(`${framework}/peer`);
    const added = n - bare;
    rows.push([
      name(framework, limiter),
      fmt(n),
      limiter === 'bare' ? '' : `+${fmt(added)}`,
      limiter === 'bare' || peer === undefined ? '' : `${fmt(added / (peer - bare), 2)}×`,
    ]);
  }
  console.log(table(['server', 'instructions/request', 'added over bare', 'added, vs the peer'], rows));
}

await main();
