/**
 * `sluice/hono` on real Bun, Deno and workerd (the npm packages `bun`, `deno`, `workerd`), each keyed by
 * the peer address its runtime reports, all sharing one limit through `sluice/remote` and a real
 * `sluice serve`. The app (test/runtimes/app/) is bundled with esbuild — as a Worker is deployed — so
 * each runtime runs the same plain JavaScript, and any `node:*` import would fail here.
 *
 * Requests come from distinct loopback source addresses (127.0.0.2, …): each address must get its own
 * limit, and many requests from one address spread over all runtimes at once must admit exactly it.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { build } from 'esbuild';
import { type SluiceProcess, startSluice } from '../../../server/test/integration/helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..', '..');
const BIN = join(ROOT, 'node_modules', '.bin');
const LIMIT = 5;
const RUNTIMES = ['bun', 'deno', 'workerd'] as const;
type Runtime = (typeof RUNTIMES)[number];

interface Running {
  readonly runtime: Runtime;
  readonly port: number;
  readonly child: ChildProcess;
  output(): string;
}

const cache = join(ROOT, 'node_modules', '.cache');
mkdirSync(cache, { recursive: true });
const work = mkdtempSync(join(cache, 'sluice-runtimes-'));
let service: SluiceProcess | undefined;
const running: Running[] = [];

/** Why a runtime cannot run here, or undefined when it can. */
function unavailable(runtime: Runtime): string | undefined {
  return existsSync(join(BIN, runtime))
    ? undefined
    : `${runtime} is not installed (npm ci installs it from the npm registry)`;
}

async function bundle(entry: Runtime): Promise<string> {
  const outfile = join(work, `${entry}.mjs`);
  await build({
    entryPoints: [join(import.meta.dirname, 'app', `${entry}.ts`)],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    // As wrangler bundles a Worker: sluice/hono is then its edge build.
    conditions: entry === 'workerd' ? ['workerd', 'worker', 'sluice-source'] : ['sluice-source'],
    logLevel: 'warning',
  });
  return outfile;
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** Starts a runtime's app and resolves once it listens (bounded: 20 s). */
async function start(runtime: Runtime, url: string): Promise<Running> {
  const script = await bundle(runtime);
  const env = {
    ...process.env,
    SLUICE_URL: url,
    LIMIT: String(LIMIT),
    DENO_DIR: join(work, 'deno'),
    DENO_NO_UPDATE_CHECK: '1',
  };
  let args: string[];
  let port: number | undefined;
  if (runtime === 'bun') args = ['run', script];
  else if (runtime === 'deno') args = ['run', '--allow-net', '--allow-env', script];
  else {
    port = await freePort();
    const config = join(work, 'workerd.capnp');
    writeFileSync(
      config,
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .app), (name = "net", network = (allow = ["local", "private", "public"])) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const app :Workerd.Worker = (
  modules = [ (name = "worker", esModule = embed "workerd.mjs") ],
  compatibilityDate = "2025-01-01",
  bindings = [ (name = "SLUICE_URL", text = "${url}"), (name = "LIMIT", text = "${LIMIT}") ],
  globalOutbound = "net",
);
`,
    );
    args = ['serve', config];
  }
  const child = spawn(join(BIN, runtime), args, { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => {
    out += b.toString();
  });
  child.stderr?.on('data', (b: Buffer) => {
    out += b.toString();
  });
  const run: Running = { runtime, port: 0, child, output: () => out };
  running.push(run);
  const listening = await waitFor(20_000, async () => {
    if (child.exitCode !== null) throw new Error(`${runtime} exited ${child.exitCode}:\n${out}`);
    if (port !== undefined)
      return (await get(port, '127.0.0.1').catch(() => undefined)) === undefined ? undefined : port;
    const m = /\{"listening":(\d+)\}/.exec(out);
    return m ? Number(m[1]) : undefined;
  });
  const ready = { ...run, port: listening };
  running[running.indexOf(run)] = ready;
  return ready;
}

async function waitFor<T>(ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** GET / from `from` (a loopback source address); the status and the runtime that answered. */
function get(port: number, from: string): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((done, fail) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/', localAddress: from, agent: false, timeout: 15_000 },
      (res) => {
        let body = '';
        res.on('data', (b: Buffer) => {
          body += b.toString();
        });
        res.on('end', () => done({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', fail);
    req.end();
  });
}

const skip = RUNTIMES.map(unavailable).find((reason) => reason !== undefined);

describe('sluice/hono on Bun, Deno and workerd, one limit through sluice/remote', { skip, timeout: 120_000 }, () => {
  before(async () => {
    service = await startSluice();
    const url = `http://127.0.0.1:${service.http}`;
    for (const runtime of RUNTIMES) await start(runtime, url);
  });

  after(async () => {
    for (const r of running) if (r.child.exitCode === null) r.child.kill('SIGTERM');
    await service?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const apps = () => running.filter((r) => r.port > 0);

  it('each runtime answers, with the rate-limit headers', async () => {
    for (const app of apps()) {
      const res = await get(app.port, '127.0.0.20');
      assert.equal(res.status, 200, `${app.runtime}: ${res.body}\n${app.output()}`);
      assert.deepEqual(JSON.parse(res.body), { runtime: app.runtime });
      assert.equal(res.headers['x-ratelimit-limit'], String(LIMIT));
      assert.match(String(res.headers.ratelimit), /^"shared";r=\d+;t=\d+$/);
    }
  });

  it('keys by peer address: every source address gets its own limit, on every runtime', async () => {
    for (const app of apps()) {
      const octet = { bun: 30, deno: 40, workerd: 50 }[app.runtime];
      for (let a = 0; a < 4; a++) {
        const from = `127.0.0.${octet + a}`;
        const statuses: number[] = [];
        for (let i = 0; i < LIMIT + 2; i++) statuses.push((await get(app.port, from)).status);
        assert.deepEqual(
          statuses,
          [...Array(LIMIT).fill(200), 429, 429],
          `${app.runtime} from ${from}: ${statuses.join(',')}\n${app.output()}`,
        );
      }
    }
  });

  it('N requests from one address, spread over the runtimes at once, admit exactly the limit', async () => {
    const n = 60;
    const answered = await Promise.all(
      Array.from({ length: n }, (_, i) => {
        const app = apps()[i % apps().length] as Running;
        return get(app.port, '127.0.0.99').then((r) => ({ runtime: app.runtime, status: r.status }));
      }),
    );
    const admitted = answered.filter((r) => r.status === 200);
    assert.equal(admitted.length, LIMIT, JSON.stringify(answered));
    assert.equal(answered.filter((r) => r.status === 429).length, n - LIMIT);
  });
});
