/**
 * Token budgets through the gateway (issue 40): 1,000 streamed requests on one API key arriving
 * within 3 s against a tokens-per-minute limit, random output lengths, 10 % of clients leaving after the
 * first chunk — through `sluice serve --upstream` with an `llm:` section (reserve the estimate, settle the
 * usage), and the same load charged after the response only (what hand-built limiters do: look at the
 * budget, send, charge the usage at the end; here via `/v1/check` and the plain gateway). The upstream
 * counts the tokens it served per minute window. Then the gateway's own cost per streamed request
 * against plain proxying (the same gateway without the `llm:` section), in the same run: latency as the
 * client sees it, and the gateway process's CPU per request (from /proc, steadier on a shared machine).
 *
 *   npm run bench -- tokens
 *   BENCH_TOKENS_BASELINE=/path/to/other/checkout npm run bench -- tokens   # + that checkout's llm: gateway
 *                                                         # in the overhead rounds, for a before/after
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fmt, table } from './lib/measure.js';
import { cpuSeconds } from './lib/proc-cpu.js';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = import.meta.url.endsWith('.ts')
  ? ['--import', 'tsx', resolve(ROOT, 'packages/server/src/cli/main.ts')]
  : [resolve(ROOT, 'packages/server/src/cli/main.js')];
const REQUESTS = 1000;
/**
 * The requests arrive over this long (one every 3 ms), all in flight together once they are admitted:
 * arriving in one burst, only what the reservations cover (~190) is admitted and the budget's real use
 * never reaches the limit — the overshoot is measured only when settles give tokens back while requests
 * still come.
 */
const ARRIVAL_MS = 3000;
/** A run starts with at least this long left in its minute, so it is measured in one window of the limit. */
const RUN_ROOM_MS = 30_000;
const LIMIT = 100_000;
const MAX_TOKENS = 500;
/** What the upstream reports as input: above the gateway's estimate of the prompt, as real estimates miss. */
const PROMPT_TOKENS = 40;
const PROMPT = 'Summarise the following paragraph in one sentence, keeping every number it quotes. '.repeat(1);
const OVERHEAD_REQUESTS = 1000;
const OVERHEAD_CONCURRENCY = 50;
const OVERHEAD_TOKENS = 200;
/** Rounds of the overhead runs: each loads every gateway in turn, so background load falls on all alike. */
const OVERHEAD_ROUNDS = 2;
const BASELINE = process.env.BENCH_TOKENS_BASELINE;

/**
 * The upstream: an OpenAI-style stream of n one-token words, 16 a chunk, usage last; tokens served per
 * mode and minute. The overhead runs get chunks shaped as OpenAI sends them with
 * `stream_options.include_usage` (an id, the model, `logprobs`, `"usage":null` in every chunk: ~290 bytes
 * an event); the budget runs get minimal ones. Unpaced, it wrote a whole answer into the socket before it
 * saw a client's close: the tokens of a stream the gateway had already cut counted as served (most of
 * the overshoot measured).
 */
const UPSTREAM = `
const http = require('node:http');
const served = {};
const word = 'data: {"choices":[{"index":0,"delta":{"content":"abc "}}]}\\n\\n';
const shaped = 'data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,' +
  '"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f9f4fb6dbf",' +
  '"choices":[{"index":0,"delta":{"content":" abc"},"logprobs":null,"finish_reason":null}],"usage":null}\\n\\n';
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/served') { res.end(JSON.stringify(served)); return; }
  req.resume();
  const n = Number(url.searchParams.get('n'));
  const paced = req.headers['x-bench-mode'] !== 'overhead';
  const at = (req.headers['x-bench-mode'] || 'none') + '@' + Math.floor(Date.now() / 60000);
  const add = (t) => { served[at] = (served[at] || 0) + t; };
  add(${PROMPT_TOKENS});
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let sent = 0;
  const step = () => {
    if (res.destroyed) return;
    const m = Math.min(16, n - sent);
    const chunk = (paced ? word : shaped).repeat(m);
    sent += m;
    add(m);
    if (sent >= n) {
      res.end(chunk + 'data: {"choices":[],"usage":{"prompt_tokens":${PROMPT_TOKENS},"completion_tokens":' + n + '}}\\n\\ndata: [DONE]\\n\\n');
      return;
    }
    res.write(chunk);
    // The budget runs generate at a pace (16 tokens a millisecond, still far above a real model's), so a
    // client's leaving stops the output as it would stop a model; the overhead run goes flat out.
    if (paced) setTimeout(step, 1);
    else setImmediate(step);
  };
  step();
}).listen(0, '127.0.0.1', function () { console.log(JSON.stringify({ port: this.address().port })); });
`;

interface Proc {
  child: ChildProcess;
  line: Record<string, unknown>;
}

/** Starts a process and resolves with the first JSON line on its stdout that `ready` accepts. */
function start(argv: string[], ready: (line: Record<string, unknown>) => boolean): Promise<Proc> {
  const child = spawn(process.execPath, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((done, fail) => {
    let out = '';
    const onData = (c: Buffer) => {
      out += c.toString();
      const lines = out.split('\n');
      out = lines.pop() ?? '';
      for (const text of lines) {
        if (!text.startsWith('{')) continue;
        const line = JSON.parse(text) as Record<string, unknown>;
        if (!ready(line)) continue;
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        done({ child, line });
        return;
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

/** One streamed request; `leave` reads the first chunk and goes. Resolves with its status and the usage it read. */
async function ask(
  url: string,
  key: string,
  mode: string,
  leave: boolean,
): Promise<{ status: number; tokens: number }> {
  // A connection cut under load (a keep-alive socket closed as it was reused) counts as status 0.
  return askOnce(url, key, mode, leave).catch(() => ({ status: 0, tokens: 0 }));
}

async function askOnce(
  url: string,
  key: string,
  mode: string,
  leave: boolean,
): Promise<{ status: number; tokens: number }> {
  const abort = new AbortController();
  const body = JSON.stringify({
    model: 'm',
    stream: true,
    max_tokens: MAX_TOKENS,
    messages: [{ role: 'user', content: PROMPT }],
  });
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-bench-mode': mode },
    body,
    signal: abort.signal,
  });
  if (res.status !== 200 || leave) {
    if (leave && res.status === 200) await res.body?.getReader().read();
    abort.abort();
    return { status: res.status, tokens: 0 };
  }
  const text = await res.text();
  const usage = /"prompt_tokens":(\d+),"completion_tokens":(\d+)/.exec(text);
  return { status: 200, tokens: usage ? Number(usage[1]) + Number(usage[2]) : 0 };
}

/** Waits until request `i`'s arrival time, `ARRIVAL_MS / REQUESTS` apart from `t0`. */
const arrival = (t0: number, i: number) =>
  new Promise<void>((go) => setTimeout(go, Math.max(0, t0 + (i * ARRIVAL_MS) / REQUESTS - performance.now())));

/**
 * The upstream counts a request's tokens in the minute it started, as the limit's fixed window counts its
 * reservation in the minute it was taken; a run that straddles a minute would split across two windows,
 * each with a budget of its own, so it starts at the next minute when the current one has too little left.
 */
async function atWindowStart(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < RUN_ROOM_MS) await new Promise((go) => setTimeout(go, left + 50));
}

const outputOf = () => 1 + Math.floor(Math.random() * MAX_TOKENS);
const leaves = (i: number) => i % 10 === 0;

/** Charging after the response only: look at what is left (`peek`), send, charge the usage read. */
async function askAfterOnly(check: string, url: string, i: number): Promise<number> {
  const item = { key: 'after-only', limit: LIMIT, period: '1m' };
  const peek = await post(check, { checks: [{ ...item, op: 'peek', cost: 1 }] });
  if (peek.results[0]?.allowed !== true) return 429;
  const r = await ask(url, 'k', 'after', leaves(i));
  // A client that left is charged nothing: its usage was never read (the hand-built limiter's blind spot).
  if (r.tokens > 0) await post(check, { checks: [{ ...item, cost: r.tokens }] });
  return r.status;
}

/** `/v1/check` calls in flight at most (the API port refuses a thousand new connections at once). */
const CHECK_CONCURRENCY = 64;
let checking = 0;
const waitingChecks: (() => void)[] = [];

async function post(url: string, body: unknown): Promise<{ results: { allowed?: boolean }[] }> {
  if (checking >= CHECK_CONCURRENCY) await new Promise<void>((go) => waitingChecks.push(go));
  checking++;
  try {
    // A reused keep-alive connection the service has just closed is asked again on a new one.
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await fetch(url, { method: 'POST', body: JSON.stringify(body) });
        return (await res.json()) as { results: { allowed?: boolean }[] };
      } catch (error) {
        if (attempt === 3) throw error;
      }
    }
  } finally {
    checking--;
    waitingChecks.shift()?.();
  }
}

/**
 * Mean and p50/p99 of `n` requests at `concurrency`, each a fresh key (budgets never bind), and the CPU
 * the gateway process `pid` spent per request meanwhile (ms).
 */
async function latency(
  url: string,
  mode: string,
  pid: number,
): Promise<{ mean: number; p50: number; p99: number; cpuMs: number }> {
  const times: number[] = [];
  const cpuBefore = cpuSeconds(pid);
  let next = 0;
  const worker = async () => {
    while (next < OVERHEAD_REQUESTS) {
      const i = next++;
      const t = performance.now();
      await ask(`${url}/v1/chat/completions?n=${OVERHEAD_TOKENS}`, `key-${i}`, mode, false);
      times.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: OVERHEAD_CONCURRENCY }, worker));
  const cpuMs = ((cpuSeconds(pid) - cpuBefore) * 1000) / OVERHEAD_REQUESTS;
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  return { mean: times.reduce((a, b) => a + b, 0) / times.length, p50: at(0.5), p99: at(0.99), cpuMs };
}

/** Another checkout's CLI: its compiled build when its own `npm run bench` made one (tsx's transform would cost it alone). */
function baselineCli(checkout: string): string[] {
  const compiled = resolve(checkout, '.bench-out/packages/server/src/cli/main.js');
  return existsSync(compiled) ? [compiled] : ['--import', 'tsx', resolve(checkout, 'packages/server/src/cli/main.ts')];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-tokens-'));
  const procs: Proc[] = [];
  try {
    const upstream = await start(['-e', UPSTREAM], (l) => typeof l.port === 'number');
    procs.push(upstream);
    const upstreamUrl = `http://127.0.0.1:${upstream.line.port as number}`;
    const llm = `domain: llm\nllm:\n  provider: openai\n  key: { header: authorization }\n  limits:\n    total_tokens: { limit: ${LIMIT}, period: 1m }\n`;
    writeFileSync(join(dir, 'llm.yaml'), llm);
    writeFileSync(join(dir, 'plain.yaml'), 'domain: plain\n');
    const gateway = async (config: string, cli = CLI) => {
      const argv = [...cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', '--proxy-port', '0'];
      argv.push('--config', join(dir, config), '--upstream', upstreamUrl, '--no-watch');
      argv.push('--gateway-max-client-inflight', '5000', '--upstream-max-sockets', '2048');
      const p = await start(argv, (l) => l.msg === 'listening');
      procs.push(p);
      return {
        proxy: `http://127.0.0.1:${p.line.proxy as number}`,
        http: `http://127.0.0.1:${p.line.http as number}`,
        pid: p.child.pid as number,
      };
    };
    const budgeted = await gateway('llm.yaml');
    const plain = await gateway('plain.yaml');
    const baseline = BASELINE === undefined ? undefined : await gateway('llm.yaml', baselineCli(BASELINE));

    await atWindowStart();
    const started = performance.now();
    const reserved = await Promise.all(
      Array.from({ length: REQUESTS }, async (_, i) => {
        await arrival(started, i);
        return ask(`${budgeted.proxy}/v1/chat/completions?n=${outputOf()}`, 'one-key', 'reserve', leaves(i));
      }),
    );
    const reserveSeconds = (performance.now() - started) / 1000;
    await atWindowStart();
    const afterStarted = performance.now();
    const after = await Promise.all(
      Array.from({ length: REQUESTS }, async (_, i) => {
        await arrival(afterStarted, i);
        return askAfterOnly(`${plain.http}/v1/check`, `${plain.proxy}/v1/chat/completions?n=${outputOf()}`, i);
      }),
    );
    const served = (await fetch(`${upstreamUrl}/served`).then((r) => r.json())) as Record<string, number>;
    const metrics = await fetch(`${budgeted.http}/metrics`).then((r) => r.text());
    const outstanding = /^sluice_llm_reservations_outstanding (\S+)$/m.exec(metrics)?.[1] ?? '?';
    const worst = (mode: string) =>
      Math.max(...Object.entries(served).flatMap(([k, v]) => (k.startsWith(`${mode}@`) ? [v] : [0])));
    const admitted = (statuses: number[]) =>
      `${statuses.filter((s) => s === 200).length}${statuses.includes(0) ? ` (${statuses.filter((s) => s === 0).length} cut)` : ''}`;
    console.log(
      `${REQUESTS} streamed requests on one key arriving over ${fmt(ARRIVAL_MS / 1000, 1)} s, total_tokens ${fmt(LIMIT)}/min, max_tokens ${MAX_TOKENS}, ` +
        `output 1..${MAX_TOKENS} tokens, input ${PROMPT_TOKENS} reported (above the estimate), 10 % clients leave after the first chunk`,
    );
    console.log(
      table(
        [
          'charging',
          'admitted',
          'tokens served (worst minute)',
          'over the limit',
          'one request at most',
          'outstanding after',
        ],
        [
          [
            'reserve estimate + max_tokens, settle usage (gateway llm:)',
            admitted(reserved.map((r) => r.status)),
            fmt(worst('reserve')),
            fmt(Math.max(0, worst('reserve') - LIMIT)),
            fmt(PROMPT_TOKENS + MAX_TOKENS),
            outstanding,
          ],
          [
            'after the response only (peek, send, charge usage)',
            admitted(after),
            fmt(worst('after')),
            fmt(Math.max(0, worst('after') - LIMIT)),
            fmt(PROMPT_TOKENS + MAX_TOKENS),
            '-',
          ],
        ],
      ),
    );
    const windows = Object.entries(served)
      .filter(([k]) => !k.startsWith('overhead@'))
      .map(([k, v]) => `${k.replace('@', ' minute ')}: ${fmt(v)}`);
    console.log(`(the reserve run took ${fmt(reserveSeconds, 1)} s; tokens served per minute: ${windows.join(', ')})`);
    const gateways = [
      { name: 'plain proxying (gateway, no llm:)', ...plain },
      { name: 'gateway llm: reserve + stream + settle', ...budgeted },
      ...(baseline === undefined ? [] : [{ name: `baseline ${BASELINE} llm:`, ...baseline }]),
    ];
    const rows: (string | number)[][] = [];
    for (let round = 1; round <= OVERHEAD_ROUNDS; round++) {
      for (const g of gateways) {
        const l = await latency(g.proxy, 'overhead', g.pid);
        const name = `${g.name}${round > 1 ? ` (round ${round})` : ''}`;
        rows.push([name, fmt(l.cpuMs, 3), fmt(l.mean, 2), fmt(l.p50, 2), fmt(l.p99, 2)]);
      }
    }
    console.log(
      `\n${OVERHEAD_REQUESTS} streamed requests of ${OVERHEAD_TOKENS} tokens each (OpenAI-shaped chunks), ${OVERHEAD_CONCURRENCY} at a time, a key each`,
    );
    console.log(table(['proxy', 'gateway CPU ms/request', 'mean ms', 'p50 ms', 'p99 ms'], rows));
  } finally {
    for (const p of procs) await stop(p);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
