/**
 * `npm start` on a fresh clone: the build runs (dist/ does not exist in a clone) and the service serves
 * the built-in example. The clone shares this tree's node_modules instead of running `npm install`
 * (which CI's `npm ci` exercises already), so the test stays offline and quick.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { postJson, ROOT } from './helpers.js';

describe('npm start on a fresh clone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-clone-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('builds, then serves the built-in example rules; SIGTERM stops it with exit 0', { timeout: 180_000 }, async () => {
    const clone = join(dir, 'sluice');
    const git = spawnSync('git', ['clone', '--quiet', '--no-hardlinks', ROOT, clone], { encoding: 'utf8' });
    assert.equal(git.status, 0, git.stderr);
    assert.equal(existsSync(join(clone, 'dist')), false);
    symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');

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
      assert.ok(existsSync(join(clone, 'dist', 'cli', 'main.js')), 'the build made dist/');
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
