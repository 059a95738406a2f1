/**
 * Reloading hostile or broken rules into the real `sluice serve`: an alias bomb, a file with thousands
 * of problems, a file over the size cap, invalid YAML. Each reload fails with its code, the process
 * stays up, and the last good rules keep deciding — with their counters, which keep counting down
 * across every failed reload and across a good reload that leaves the rule unchanged.
 */
import assert from 'node:assert/strict';
import { truncateSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { MAX_REPORTED_ISSUES, MAX_RULE_FILE_BYTES, RULE_ISSUE_CODES } from 'sluice/rules';
import { type SluiceProcess, startSluice, tempFile } from './helpers.js';

const TOKEN = 'reload-admin-token-0123456789abcdef';
const RULES = `domain: rl
descriptors:
  - key: user
    rate_limit: { unit: day, requests_per_unit: 100 }
`;

function aliasBomb(): string {
  const lines = ['domain: rl', 'descriptors:', '  - &l0 {key: k0, value: v}'];
  for (let i = 1; i <= 9; i++) {
    lines.push(`  - &l${i} {key: k${i}, descriptors: [${Array.from({ length: 10 }, () => `*l${i - 1}`).join(', ')}]}`);
  }
  return `${lines.join('\n')}\n`;
}

describe('config reload keeps the last good rules and counters', () => {
  let sluice: SluiceProcess;
  let base: string;
  let config: ReturnType<typeof tempFile>;
  const reload = async () => {
    const res = await fetch(`${base}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    return { status: res.status, body: (await res.json()) as { issues?: { code: string }[] } };
  };
  /** One hit for user=alice: the remaining count shows whether the counters survived. */
  const hit = async () => {
    const res = await fetch(`${base}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ domain: 'rl', descriptors: [{ entries: [{ key: 'user', value: 'alice' }] }] }),
    });
    const body = (await res.json()) as {
      statuses: { currentLimit?: { requestsPerUnit: number }; limitRemaining?: number }[];
    };
    return { limit: body.statuses[0]?.currentLimit?.requestsPerUnit, remaining: body.statuses[0]?.limitRemaining };
  };

  before(async () => {
    config = tempFile('rules.yaml', RULES);
    sluice = await startSluice(['--config', config.path, '--no-watch'], { SLUICE_ADMIN_TOKEN: TOKEN });
    base = `http://127.0.0.1:${sluice.http}`;
  });
  after(async () => {
    assert.equal((await sluice?.stop())?.code, 0);
    config?.remove();
  });

  it('refuses each bad file with its code and keeps deciding with the rules and counters it had', async () => {
    assert.deepEqual(await hit(), { limit: 100, remaining: 99 });
    assert.deepEqual(await hit(), { limit: 100, remaining: 98 });
    const bad: [string, () => void, string][] = [
      ['alias bomb', () => writeFileSync(config.path, aliasBomb()), RULE_ISSUE_CODES.tooComplex],
      [
        '5,000 problems',
        () =>
          writeFileSync(
            config.path,
            `domain: rl\ndescriptors: [${Array.from({ length: 5000 }, () => '{value: v}').join(', ')}]\n`,
          ),
        RULE_ISSUE_CODES.tooManyIssues,
      ],
      [
        'a file over the size cap',
        () => {
          writeFileSync(config.path, RULES);
          truncateSync(config.path, MAX_RULE_FILE_BYTES + 1);
        },
        RULE_ISSUE_CODES.fileTooLarge,
      ],
      ['invalid YAML', () => writeFileSync(config.path, 'domain: rl\ndescriptors: [\n'), RULE_ISSUE_CODES.badYaml],
    ];
    let remaining = 98;
    for (const [name, write, code] of bad) {
      write();
      const res = await reload();
      assert.equal(res.status, 422, name);
      assert.equal(res.body.issues?.at(-1)?.code, code, name);
      assert.ok((res.body.issues?.length ?? 0) <= MAX_REPORTED_ISSUES + 1, name);
      remaining--;
      assert.deepEqual(await hit(), { limit: 100, remaining }, `${name}: the last good rules and counters stay`);
    }
    const status = (await (await fetch(`${base}/api/rules`)).json()) as { config: { lastError?: unknown } };
    assert.ok(status.config.lastError, 'the failure is recorded for the dashboard');

    // A good file that leaves the rule as it was: applied, and the counter goes on from where it was.
    writeFileSync(config.path, `# reloaded\n${RULES}`);
    assert.equal((await reload()).status, 200);
    assert.deepEqual(await hit(), { limit: 100, remaining: remaining - 1 });
    assert.equal(sluice.child.exitCode, null, 'the service is still running');
  });
});
