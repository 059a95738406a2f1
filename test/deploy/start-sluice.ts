// Starts `sluice serve` as a deployment would: the CLI in a process of its own, with exactly the given
// environment (plus what running TypeScript needs) and arguments; learns its ports from --ports-file.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MAIN = join(import.meta.dirname, '..', '..', 'packages/server/src/cli/main.ts');

/** A running service: its ports, what it printed, and how to stop it. */
export interface StartedSluice {
  http: number;
  grpc: number;
  output: () => string;
  stop: () => Promise<void>;
}

/** Runs `sluice <args> --port 0 --grpc-port 0` (flags win over the environment, so ports never clash). */
export async function startSluice(args: readonly string[], env: Record<string, string>): Promise<StartedSluice> {
  const dir = mkdtempSync(join(tmpdir(), 'deploy-sluice-'));
  const portsFile = join(dir, 'ports.json');
  const runEnv = { ...env, PATH: process.env.PATH ?? '', NODE_OPTIONS: process.env.NODE_OPTIONS ?? '' };
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', MAIN, ...args, '--port', '0', '--grpc-port', '0', '--ports-file', portsFile],
    { env: runEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout?.on('data', (b) => {
    out += b;
  });
  child.stderr?.on('data', (b) => {
    out += b;
  });
  const deadline = Date.now() + 30_000;
  while (!existsSync(portsFile) || readFileSync(portsFile, 'utf8').trim() === '') {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`sluice did not start (exit ${child.exitCode}):\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const ports = JSON.parse(readFileSync(portsFile, 'utf8')) as { http: number; grpc: number };
  return {
    ...ports,
    output: () => out,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
