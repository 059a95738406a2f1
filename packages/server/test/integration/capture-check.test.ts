/**
 * `/v1/check` in a capture, end to end: a real `sluice serve --capture` answers checks (several policies and
 * algorithms, some rejected, alongside `/json` decisions), and `sluice replay` (a real process) decides the
 * capture again with 0 mismatches, the checks under their own policies whatever the rules file says.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CLI, postJson, ROOT, startSluice, tempFile } from './helpers.js';

const rulesText = (perMinute: number) => `domain: api
descriptors:
  - key: user
    rate_limit: { name: per-user, unit: minute, requests_per_unit: ${perMinute} }
`;
const rules = tempFile('rules.yaml', rulesText(5));
const stricter = tempFile('stricter.yaml', rulesText(2));
const dir = mkdtempSync(join(tmpdir(), 'sluice-capture-check-'));
after(() => {
  rules.remove();
  stricter.remove();
  rmSync(dir, { recursive: true, force: true });
});

/** `sluice replay` as a process: its exit code and output. */
function replay(rulesPath: string): { status: number | null; out: string; err: string } {
  const files = readdirSync(dir).map((f) => join(dir, f));
  const run = spawnSync(process.execPath, [...CLI, 'replay', ...files, '--rules', rulesPath], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return { status: run.status, out: run.stdout, err: run.stderr };
}

describe('sluice serve --capture with /v1/check', () => {
  it('captures /v1/check decisions, and sluice replay reproduces them (0 mismatches)', async () => {
    const sluice = await startSluice(['--config', rules.path, '--capture', dir, '--capture-sample', '1']);
    let rejected = 0;
    try {
      const base = `http://127.0.0.1:${sluice.http}`;
      for (let i = 0; i < 30; i++) {
        const checks = [
          { key: `k${i % 3}`, limit: 5, period: '1m' },
          { key: 'secret-user-1', limit: 3, period: '10s', algorithm: 'gcra', burst: 2, name: 'uploads' },
          { key: `tb${i % 2}`, limit: 4, period: '1m', algorithm: 'token-bucket', cost: 2 },
          // Not captured: a peek decides nothing, a group is all or nothing, a bad item is an error.
          { key: 'peeked', limit: 1, period: '1m', op: 'peek' },
          { key: 'g1', limit: 2, period: '1m', group: 1 },
          { key: 'g2', limit: 2, period: '1m', group: 1 },
          { key: 'bad', limit: -1, period: '1m' },
        ];
        const res = await postJson(`${base}/v1/check`, { checks });
        assert.equal(res.status, 200, res.text);
        const results = res.json.results as { allowed?: boolean }[];
        rejected += results.slice(0, 3).filter((r) => r.allowed === false).length;
        await postJson(`${base}/json`, {
          domain: 'api',
          descriptors: [{ entries: [{ key: 'user', value: 'alice' }] }],
        });
      }
    } finally {
      await sluice.stop();
    }
    assert.ok(rejected > 0, 'some checks were rejected live');
    const lines = readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n'));
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const checks = records.filter((r) => r.check !== undefined);
    assert.equal(checks.length, 90, 'three checks a body, nothing of the peek, the group or the bad item');
    assert.equal(records.length - checks.length, 30, 'and the /json decisions');
    assert.equal(checks.filter((r) => r.outcome === 'OVER_LIMIT').length, rejected);
    assert.ok(!lines.join('\n').includes('secret-user-1'), 'check keys are hashed without --capture-raw-keys');
    assert.deepEqual(Object.keys(checks[1]?.check as object), ['key', 'limit', 'period', 'algorithm', 'burst', 'name']);
    assert.equal(checks[0]?.src, 'check');

    const same = replay(rules.path);
    assert.equal(same.status, 0, same.err);
    assert.equal(same.err, '', 'no bad line');
    assert.match(same.out, /^120 requests replayed \(90 of them \/v1\/check items/m);
    assert.match(same.out, /^\(all\)\t\d+\/\d+\t\d+\/\d+\t\+0 -0$/m, 'replay under the same rules: 0 mismatches');
    assert.match(same.out, /^check uploads~\S+\t\d+\/[1-9]\d*\t\d+\/[1-9]\d*\t\+0 -0$/m);
    // Suggestions for the checks' policies too, keyed by the (hashed) keys they counted.
    assert.match(same.out, /^check uploads~\S+: 1 keys, 30 requests$/m);

    // A stricter rules file flips /json requests; the checks keep their policies and do not flip.
    const strict = replay(stricter.path);
    assert.equal(strict.status, 0, strict.err);
    // (The counts depend on how many minutes the run took: a loaded machine can cross a window.)
    assert.match(strict.out, /^per-user\t\d+\/\d+\t\d+\/\d+\t\+[1-9]\d* -0$/m);
    for (const row of strict.out.split('\n').filter((l) => l.startsWith('check '))) {
      if (row.includes('\t')) assert.match(row, /\t\+0 -0$/, row);
    }
  });
});
