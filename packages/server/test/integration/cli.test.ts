/**
 * `sluice validate`, `sluice check` and `sluice bench` as a script would run them: exit codes and output.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CLI, ROOT, type SluiceProcess, startSluice, tempFile, unique } from './helpers.js';

const CONFIG = join(ROOT, 'test', 'integration', 'fixtures', 'envoy.yaml');

function sluice(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('sluice validate', () => {
  it('exits 0 for valid rules and 1 with file:line for each problem', async () => {
    const good = await sluice(['validate', CONFIG]);
    assert.equal(good.code, 0);
    assert.match(good.stdout, /^ok: 1 domain \(it\)/);
    const bad = tempFile(
      'bad.yaml',
      'domain: x\ndescriptors:\n  - key: a\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n  - key: ""\n',
    );
    try {
      const res = await sluice(['validate', bad.path]);
      assert.equal(res.code, 1);
      assert.match(res.stderr, new RegExp(`${bad.path}:4:\\d+ ERR_SLUICE_RULES_UNKNOWN_UNIT`));
      assert.match(res.stderr, /2 problems/);
    } finally {
      bad.remove();
    }
    assert.equal((await sluice(['validate'])).code, 2);
  });

  it('survives an alias bomb and a file with 200,000 problems: exit 1, the problems listed and counted', async () => {
    const fixtures = join(ROOT, '..', 'sluice', 'test', 'fixtures', 'rules', 'invalid');
    const bomb = await sluice(['validate', join(fixtures, 'too-complex.yaml')]);
    assert.equal(bomb.code, 1);
    assert.match(bomb.stderr, /too-complex\.yaml:6:32 ERR_SLUICE_RULES_TOO_COMPLEX /);
    const many = tempFile(
      'many.yaml',
      `domain: many\ndescriptors: [${Array.from({ length: 200_000 }, () => '{}').join(',')}]\n`,
    );
    try {
      const res = await sluice(['validate', '--json', many.path]);
      assert.equal(res.code, 1);
      const issues = (JSON.parse(res.stdout) as { issues: { code: string; message: string }[] }).issues;
      assert.equal(issues.length, 101);
      assert.equal(issues.at(-1)?.code, 'ERR_SLUICE_RULES_TOO_MANY_ISSUES');
      assert.match(issues.at(-1)?.message ?? '', /^and 199900 more problems/);
    } finally {
      many.remove();
    }
  });
});

describe('sluice check and sluice bench against a running service', () => {
  let service: SluiceProcess;
  before(async () => {
    service = await startSluice(['--config', CONFIG]);
  });
  after(async () => {
    assert.equal((await service?.stop())?.code, 0);
  });

  it('check exits 0 while OK and 1 once OVER_LIMIT, over HTTP and gRPC', async () => {
    const url = `http://127.0.0.1:${service.http}`;
    const key = unique('c');
    const first = await sluice(['check', '--url', url, '--domain', 'it', '--descriptor', `specific=${key}`]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^OK\n {2}specific=.*: OK 1\/day, remaining 0/);
    const second = await sluice([
      'check',
      '--grpc',
      `127.0.0.1:${service.grpc}`,
      '--domain',
      'it',
      '--descriptor',
      `specific=${key}`,
      '-q',
    ]);
    assert.equal(second.code, 1);
    assert.equal(second.stdout, '');
    const v1 = await sluice(['check', '--url', url, '--key', key, '--limit', '0', '--period', '1m', '--json']);
    assert.equal(v1.code, 1);
    assert.equal(JSON.parse(v1.stdout).allowed, false);
    const down = await sluice(['check', '--url', 'http://127.0.0.1:9', '--key', key, '--limit', '1', '--period', '1m']);
    assert.equal(down.code, 2);
  });

  it('bench reports decisions per second and latency percentiles', async () => {
    const res = await sluice([
      'bench',
      '--grpc',
      `127.0.0.1:${service.grpc}`,
      '--domain',
      'it',
      '--descriptor',
      'per_minute=b',
      '--duration',
      '1s',
      '--warmup',
      '0s',
      '--concurrency',
      '8',
      '--json',
    ]);
    assert.equal(res.code, 0, res.stderr);
    const result = JSON.parse(res.stdout) as {
      decisions: number;
      decisionsPerS: number;
      errors: number;
      latencyMs: { p50: number; p99: number };
    };
    assert.ok(result.decisions > 0);
    assert.equal(result.errors, 0);
    assert.ok(result.latencyMs.p99 >= result.latencyMs.p50);
    assert.match(res.stderr, /bench: 1\.0\/1\.0 s/, 'progress is shown');
  });
});

describe('sluice serve sizing flags', () => {
  it('--memory-max-keys bounds the memory store (the least recently used key goes first)', async () => {
    const service = await startSluice(['--memory-max-keys', '2']);
    try {
      const check = async (key: string) => {
        const res = await fetch(`http://127.0.0.1:${service.http}/v1/check`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ checks: [{ key, limit: 1, period: '1h' }] }),
        });
        return ((await res.json()) as { results: { allowed: boolean }[] }).results[0]?.allowed;
      };
      assert.equal(await check('a'), true);
      assert.equal(await check('a'), false, 'a is at its limit');
      assert.equal(await check('b'), true);
      assert.equal(await check('c'), true);
      assert.equal(await check('a'), true, 'a was forgotten: only 2 keys are kept');
    } finally {
      assert.equal((await service.stop()).code, 0);
    }
  });

  it('a bad value exits 2 with the flag and its code', async () => {
    const res = await sluice(['serve', '--memory-max-keys', 'lots']);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /--memory-max-keys: 'lots' is not a whole number .*\(ERR_SLUICE_INVALID_OPTION\)/);
  });
});
