/**
 * `npm start` on a fresh clone: the build runs (dist/ does not exist in a clone) and the service serves
 * the built-in example. The clone shares this tree's node_modules instead of running `npm install`
 * (which CI's `npm ci` exercises already), so the test stays offline and quick.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { postJson, ROOT } from './helpers.js';

const REPO = resolve(ROOT, '..', '..');

/**
 * The clone's node_modules: links to this tree's installed packages, except the two workspace packages,
 * which link to the clone's own (as `npm install` would make them).
 */
function linkNodeModules(clone: string): void {
  const modules = join(clone, 'node_modules');
  mkdirSync(modules);
  for (const name of readdirSync(join(REPO, 'node_modules'))) {
    if (name === 'sluice' || name === 'sluice-server' || name === '.cache') continue;
    symlinkSync(join(REPO, 'node_modules', name), join(modules, name), 'dir');
  }
  symlinkSync(join(clone, 'packages', 'sluice'), join(modules, 'sluice'), 'dir');
  symlinkSync(join(clone, 'packages', 'server'), join(modules, 'sluice-server'), 'dir');
}

describe('npm start on a fresh clone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-clone-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('builds, then serves the built-in example rules; SIGTERM stops it with exit 0', { timeout: 480_000 }, async () => {
    const clone = join(dir, 'sluice');
    const git = spawnSync('git', ['clone', '--quiet', '--no-hardlinks', REPO, clone], { encoding: 'utf8' });
    assert.equal(git.status, 0, git.stderr);
    assert.equal(existsSync(join(clone, 'packages', 'server', 'dist')), false);
    linkNodeModules(clone);

    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', GRPC_PORT: '0', HOST: '127.0.0.1' };
    for (const name of ['REDIS_URL', 'SLUICE_CONFIG', 'SLUICE_ADMIN_TOKEN', 'PROXY_PORT', 'LOG_LEVEL'])
      delete env[name];
    // What `npm start` runs (package.json#scripts.start), without npm's own process in between.
    const child = spawn(process.execPath, ['scripts/start.mjs'], {
      cwd: clone,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const listening = await new Promise<{ http: number; grpc: number }>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => {
        stdout += c.toString();
        for (const line of stdout.split('\n')) {
          if (!line.includes('"listening"')) continue;
          resolve(JSON.parse(line));
          return;
        }
      });
      child.once('exit', (code) => reject(new Error(`npm start exited ${code}:\n${stderr}\n${stdout}`)));
    });
    try {
      assert.ok(existsSync(join(clone, 'packages', 'server', 'dist', 'cli', 'main.js')), 'the build made dist/');
      assert.ok(existsSync(join(clone, 'packages', 'sluice', 'dist', 'cjs', 'index.js')), 'the library was built too');
      assert.match(stderr, /built-in example/);
      assert.match(stderr, /domain: example/, 'the example rules are printed');
      const res = await postJson(`http://127.0.0.1:${listening.http}/json`, {
        domain: 'example',
        descriptors: [{ entries: [{ key: 'api_key', value: 'k' }] }],
      });
      assert.equal(res.status, 200);
      assert.equal(res.json.overallCode, 'OK');
      const health = await fetch(`http://127.0.0.1:${listening.http}/healthcheck`);
      assert.equal(health.status, 200);
    } finally {
      child.kill('SIGTERM');
    }
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    assert.equal(code, 0);
  });
});
