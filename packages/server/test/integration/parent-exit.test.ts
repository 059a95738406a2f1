/**
 * `npx sluice serve` killed: npm 11 does not pass SIGTERM on, so the service must notice that the npm
 * process that started it is gone and stop by itself — and only then: one started by a shell outlives it.
 * A stand-in parent (a node process) starts `sluice serve` and is killed with SIGKILL, as npm dies.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';

import { it } from 'node:test';
import { CLI, ROOT, tempFile } from './helpers.js';

/** Whether a process with this PID is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls until `ready` is true or `ms` pass. */
async function until(ready: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (ready()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return ready();
}

/**
 * Starts a parent that starts `sluice serve` (env `env`), waits until the service listens and answers,
 * kills the parent with SIGKILL, and returns the service's PID.
 */
async function orphanService(env: Record<string, string | undefined>): Promise<number> {
  const ports = tempFile('ports.json', '');
  const args = [...CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', '--ports-file', ports.path];
  const script = `const c = require('node:child_process').spawn(process.execPath, ${JSON.stringify(args)}, { cwd: ${JSON.stringify(ROOT)}, stdio: 'ignore' }); console.log(c.pid); setInterval(() => {}, 1000);`;
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
  const parent = spawn(process.execPath, ['-e', script], { env: childEnv, stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(parent.stdout, 'data')) as [Buffer];
  const pid = Number(line.toString().trim());
  try {
    const listening = await until(() => readFileSync(ports.path, 'utf8').includes('"http"'), 30_000);
    assert.ok(listening, 'sluice serve started');
    const { http } = JSON.parse(readFileSync(ports.path, 'utf8')) as { http: number };
    assert.equal((await fetch(`http://127.0.0.1:${http}/healthcheck`)).status, 200);
  } finally {
    parent.kill('SIGKILL');
    await once(parent, 'exit');
    ports.remove();
  }
  return pid;
}

it('started through npm: stops by itself within seconds once npm is gone', { timeout: 60_000 }, async () => {
  const pid = await orphanService({ npm_command: 'exec' });
  try {
    assert.ok(await until(() => !alive(pid), 10_000), 'the service exited after its npm parent was killed');
  } finally {
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
});

it(
  'started by a shell (no npm): keeps running when its parent exits, as nohup users expect',
  { timeout: 60_000 },
  async () => {
    const pid = await orphanService({ npm_command: undefined, npm_lifecycle_event: undefined });
    try {
      assert.equal(await until(() => !alive(pid), 2000), false, 'still running');
    } finally {
      process.kill(pid, 'SIGTERM');
      assert.ok(await until(() => !alive(pid), 15_000), 'and stops on SIGTERM');
    }
  },
);
