/**
 * Starts the real `sluice serve` as a child process (through tsx, from the sources) on free loopback
 * ports, and stops it by PID.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const root = resolve(import.meta.dirname, '..', '..');

/** A running service process. */
export interface ServiceProcess {
  readonly pid: number;
  readonly httpPort: number;
  readonly grpcPort: number;
  /** `http://127.0.0.1:<httpPort>` */
  readonly url: string;
  /** What it wrote to stdout and stderr so far (JSON log lines), for failure messages. */
  output(): string;
  /** SIGTERM, SIGKILL after `graceMs`; resolves with the exit code. Idempotent. */
  stop(graceMs?: number): Promise<number | null>;
}

/** Options of {@link startServiceProcess}. */
export interface ServiceProcessOptions {
  /** More `sluice serve` arguments (e.g. `['--config', file]`). */
  args?: readonly string[];
  /** More environment (e.g. `SLUICE_ADMIN_TOKEN`). */
  env?: Readonly<Record<string, string>>;
  /** @default 20_000 */
  startTimeoutMs?: number;
}

/** Runs `node --import tsx src/cli/main.ts serve --port 0 --grpc-port 0 --host 127.0.0.1 ...`. */
export async function startServiceProcess(options: ServiceProcessOptions = {}): Promise<ServiceProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-serve-'));
  const portsFile = join(dir, 'ports.json');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--grpc-port',
      '0',
      '--ports-file',
      portsFile,
      '--log-level',
      'warn',
      ...(options.args ?? []),
    ],
    { cwd: root, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => {
    exitCode = code;
  });

  const stop = async (graceMs = 5000): Promise<number | null> => {
    if (exitCode === undefined && child.pid !== undefined) {
      process.kill(child.pid, 'SIGTERM');
      const killer = setTimeout(() => {
        if (exitCode === undefined && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
      }, graceMs);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
    return exited;
  };

  const deadline = Date.now() + (options.startTimeoutMs ?? 20_000);
  let ports = readPorts(portsFile);
  while (ports === undefined) {
    if (exitCode !== undefined) {
      await stop();
      throw new Error(`sluice serve exited with ${exitCode} before listening:\n${output}`);
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`sluice serve did not listen in time:\n${output}`);
    }
    await sleep(50);
    ports = readPorts(portsFile);
  }
  return {
    pid: child.pid as number,
    httpPort: ports.http,
    grpcPort: ports.grpc,
    url: `http://127.0.0.1:${ports.http}`,
    output: () => output,
    stop,
  };
}

/** The ports file once it is complete (it may be read while being written). */
function readPorts(file: string): { http: number; grpc: number } | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { http: number; grpc: number };
  } catch {
    return undefined;
  }
}
