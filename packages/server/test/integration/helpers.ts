/**
 * Starts the real `sluice` CLI as a child process (through tsx, as `node --import tsx src/cli/main.ts`)
 * on free loopback ports, learns the bound ports from its "listening" log line, and stops it by PID.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The repository root. */
export const ROOT = resolve(import.meta.dirname, '..', '..');
/** `node --import tsx src/cli/main.ts`, as argv after the node binary. */
export const CLI = ['--import', 'tsx', join(ROOT, 'src', 'cli', 'main.ts')];

/** A running `sluice serve`. */
export interface SluiceProcess {
  readonly http: number;
  readonly grpc: number;
  readonly proxy?: number;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Every stdout line so far (JSON log records). */
  readonly stdout: string[];
  /** stderr so far. */
  stderr(): string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (default SIGTERM) and waits for the exit; SIGKILL after 10 s. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits for a log record matching `predicate`. */
  waitForLog(
    predicate: (record: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Environment variables the service reads; cleared so the caller's shell cannot change a test. */
const SERVICE_ENV = [
  'PORT',
  'GRPC_PORT',
  'PROXY_PORT',
  'REDIS_URL',
  'SLUICE_CONFIG',
  'SLUICE_ADMIN_TOKEN',
  'HOST',
  'LOG_LEVEL',
  'SLUICE_REGION',
  'SLUICE_REGION_PEERS',
];

/**
 * Runs `sluice serve --host 127.0.0.1 --port 0 --grpc-port 0 [--proxy-port 0] ...args` and resolves once it
 * listens.
 */
export async function startSluice(
  args: readonly string[] = [],
  env: Record<string, string> = {},
): Promise<SluiceProcess> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const name of SERVICE_ENV) delete childEnv[name];
  Object.assign(childEnv, env);
  const ports = ['--host', '127.0.0.1', '--port', '0', '--grpc-port', '0'];
  if (args.includes('--upstream')) ports.push('--proxy-port', '0');
  const child = spawn(process.execPath, [...CLI, 'serve', ...ports, ...args], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const stdout: string[] = [];
  let stderr = '';
  const waiters = new Set<() => void>();
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    partial += chunk.toString();
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    stdout.push(...lines.filter(Boolean));
    for (const w of waiters) w();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      for (const w of waiters) w();
      done({ code, signal });
    });
  });
  const records = () =>
    stdout.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  const waitForLog = (predicate: (record: Record<string, unknown>) => boolean, timeoutMs = 15_000) =>
    new Promise<Record<string, unknown>>((done, fail) => {
      const check = () => {
        const found = records().find(predicate);
        if (found) {
          cleanup();
          done(found);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          cleanup();
          fail(
            new Error(
              `sluice exited (${child.exitCode ?? child.signalCode}) before the expected log line:\n${stderr}\n${stdout.join('\n')}`,
            ),
          );
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        fail(new Error(`timed out waiting for a log line:\n${stderr}\n${stdout.join('\n')}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  const listening = await waitForLog((r) => r.msg === 'listening', 30_000).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  return {
    http: listening.http as number,
    grpc: listening.grpc as number,
    ...(typeof listening.proxy === 'number' ? { proxy: listening.proxy } : {}),
    pid: child.pid as number,
    child,
    stdout,
    stderr: () => stderr,
    exited,
    waitForLog,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

/** Writes `text` to a new temporary directory; returns the file's path and a cleanup. */
export function tempFile(name: string, text: string): { path: string; dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-it-'));
  const path = join(dir, name);
  writeFileSync(path, text);
  return { path, dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** POSTs JSON and returns status, headers and the parsed body. */
export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json: json as Record<string, unknown>, text };
}

/** A value no other test run uses, so counters never carry over between runs or tests. */
export function unique(prefix: string): string {
  return `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
}
