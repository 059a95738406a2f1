/**
 * envoy mode (which starts with no rule file): a reload that finds no rule file either means no domains,
 * as in envoy ratelimit, instead of a failure that keeps enforcing the deleted rules. Outside envoy mode a
 * config that disappears is still a failed reload that keeps the last good rules.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RULE_ISSUE_CODES } from 'sluice/rules';
import { startService } from '../../src/index.js';

const RULES = 'domain: gone\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1 }\n';

/** A service over a config directory holding one rule file (one call an hour for domain `gone`). */
async function serviceOverDir(startWithoutConfig: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-envoy-empty-'));
  writeFileSync(join(dir, 'gone.yaml'), RULES);
  const service = await startService({
    host: '127.0.0.1',
    http: { port: 0, dashboardDir: false },
    grpc: { port: 0 },
    config: [dir],
    watch: false,
    startWithoutConfig,
    observability: { logLevel: 'silent' },
  });
  const ask = async () => {
    const res = await fetch(`http://127.0.0.1:${service.httpPort}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ domain: 'gone', descriptors: [{ entries: [{ key: 'user', value: 'u' }] }] }),
    });
    return ((await res.json()) as { overallCode: string }).overallCode;
  };
  return {
    service,
    ask,
    removeRules: () => rmSync(join(dir, 'gone.yaml')),
    cleanUp: () => rmSync(dir, { recursive: true }),
  };
}

describe('a reload that finds no rule file', () => {
  const cleanUps: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanUp of cleanUps) await cleanUp();
  });

  it('envoy mode: no domains from then on (the deleted domain is no longer enforced), shown as loaded', async () => {
    const { service, ask, removeRules, cleanUp } = await serviceOverDir(true);
    cleanUps.push(async () => {
      await service.close();
      cleanUp();
    });
    assert.equal(await ask(), 'OK');
    assert.equal(await ask(), 'OVER_LIMIT');
    removeRules();
    const result = await service.reload();
    assert.equal(result.ok, true);
    assert.equal(await ask(), 'OK');
    assert.equal(await ask(), 'OK');
    assert.deepEqual(service.config.files, []);
    assert.equal(service.config.lastError, undefined);
  });

  it('outside envoy mode: a failed reload (ERR_SLUICE_RULES_NO_FILES) that keeps the last good rules', async () => {
    const { service, ask, removeRules, cleanUp } = await serviceOverDir(false);
    cleanUps.push(async () => {
      await service.close();
      cleanUp();
    });
    assert.equal(await ask(), 'OK');
    removeRules();
    const result = await service.reload();
    assert.equal(result.ok, false);
    assert.equal(result.ok ? undefined : result.issues[0]?.code, RULE_ISSUE_CODES.noFiles);
    assert.equal(await ask(), 'OVER_LIMIT');
    assert.equal(service.config.lastError?.issues[0]?.code, RULE_ISSUE_CODES.noFiles);
  });
});
