// The container image: built from the repo's Dockerfile on a base assembled from this machine (no image can
// be pulled), booted, and probed from inside: GET /healthcheck 200 and grpc.health.v1 SERVING, as non-root.
// Slow (about two minutes: npm ci in the build stage), so it runs in CI (CI=true) or with SLUICE_IMAGE_TEST=1.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const enabled = process.env.CI === 'true' || process.env.SLUICE_IMAGE_TEST === '1';
const BASE = 'localhost/sluice-local-base:test';
const IMAGE = 'localhost/sluice-server:test';
const RULES = 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 2 }\n';

const run = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });

// Inside this machine's container crun cannot set rlimits or cgroups, so the container runs with buildah's
// chroot isolation: the image's root filesystem, user and environment, on the host's network.
function inContainer(ctr: string, env: Record<string, string>, argv: string[]): string[] {
  const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
  return ['run', '--isolation', 'chroot', '--network', 'host', ...envArgs, ctr, '--', ...argv];
}

// buildah run leaves the service to a process of its own session: stop every descendant of ours, by id.
function killTree(pid: number): void {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const ppid = Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const all: number[] = [];
  const visit = (p: number) => {
    all.push(p);
    for (const c of children.get(p) ?? []) visit(c);
  };
  visit(pid);
  for (const p of all.reverse()) {
    try {
      process.kill(p, 'SIGTERM');
    } catch {
      // already exited
    }
  }
}

test(
  'the image builds from the Dockerfile, boots and is healthy as non-root',
  { skip: !enabled && 'set CI=true or SLUICE_IMAGE_TEST=1', timeout: 15 * 60_000 },
  async () => {
    const root = join(import.meta.dirname, '..', '..');
    run('bash', [join(root, 'deploy/image/local-base.sh'), BASE]);
    const t0 = Date.now();
    run('podman', [
      'build',
      '-q',
      '--format',
      'docker',
      '--isolation=chroot',
      '--network=host',
      '--build-arg',
      `BUILD_BASE=${BASE}`,
      '--build-arg',
      `BASE=${BASE}`,
      '-t',
      IMAGE,
      root,
    ]);
    const buildMs = Date.now() - t0;
    const [size, user, health] = run('podman', [
      'image',
      'inspect',
      IMAGE,
      '--format',
      '{{.Size}}|{{.Config.User}}|{{json .Config.Healthcheck}}',
    ])
      .trim()
      .split('|');
    const baseSize = Number(run('podman', ['image', 'inspect', BASE, '--format', '{{.Size}}']).trim());
    assert.equal(user, '65532:65532');
    assert.match(health ?? '', /probe\.mjs/);
    const rules = mkdtempSync(join(tmpdir(), 'image-rules-'));
    writeFileSync(join(rules, 'api.yaml'), RULES);
    chmodSync(rules, 0o755); // the service runs as 65532 and reads it
    const ports = { PORT: String(20_000 + (process.pid % 20_000)), GRPC_PORT: String(20_001 + (process.pid % 20_000)) };
    const ctr = run('buildah', ['from', IMAGE]).trim();
    let server: ChildProcess | undefined;
    try {
      const started = Date.now();
      const env = { ...ports, SLUICE_CONFIG: '/rules/api.yaml', REDIS_URL: 'redis://127.0.0.1:6379' };
      const args = inContainer(ctr, env, ['/nodejs/bin/node', '/app/packages/server/dist/cli/main.js', 'serve']);
      server = spawn('buildah', [args[0] as string, '-v', `${rules}:/rules:ro`, ...args.slice(1)], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      server.stderr?.on('data', (b) => {
        stderr += b;
      });
      let probe = '';
      for (let i = 0; i < 300 && !probe.startsWith('healthy') && server.exitCode === null; i++) {
        try {
          probe = run('buildah', inContainer(ctr, ports, ['/nodejs/bin/node', '/app/probe.mjs']));
        } catch (e) {
          probe = String((e as { stderr?: string }).stderr ?? e);
        }
      }
      const coldMs = Date.now() - started;
      assert.equal(server.exitCode, null, `the service exited: ${stderr}`);
      assert.match(probe, /^healthy: http \d+, grpc \d+, uid 65532/);
      const mb = (n: number) => (n / 1e6).toFixed(1);
      console.log(
        `image ${mb(Number(size))} MB (base ${mb(baseSize)} MB, sluice ${mb(Number(size) - baseSize)} MB); build ${buildMs} ms; cold start to healthy ${coldMs} ms`,
      );
    } finally {
      if (server?.pid !== undefined) killTree(server.pid);
      run('buildah', ['rm', ctr]);
      rmSync(rules, { recursive: true, force: true });
    }
  },
);
