/**
 * envoy mode reads the rule files in subdirectories of the runtime's config directory, as envoy ratelimit's
 * runtime loader does (it walks the tree: config/sub/x.yaml is the runtime key config.sub.x.yaml), and
 * reloads when they change, including subdirectories made while it runs. `--config DIR` reads only DIR's
 * own files.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { createRuntime, startEnvoy } from '../envoy/harness.js';
import { startSluice } from './helpers.js';

/** One rule file: `perMinute` calls a minute per user in `domain`. */
const rules = (domain: string, perMinute: number) =>
  `domain: ${domain}\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: ${perMinute} }\n`;

it(
  'envoy mode: rules in subdirectories are enforced at start and reloaded on edit, add and removal',
  {
    timeout: 60_000,
  },
  async () => {
    const runtime = createRuntime({ 'top.yaml': rules('top', 5) });
    mkdirSync(join(runtime.configDir, 'sub', 'deeper'), { recursive: true });
    writeFileSync(join(runtime.configDir, 'sub', 'nested.yaml'), rules('nested', 1));
    writeFileSync(join(runtime.configDir, 'sub', 'deeper', 'deep.yaml'), rules('deep', 1));
    const envoy = await startEnvoy(runtime.env);
    const code = async (domain: string, user = 'u') => (await envoy.ask(domain, [[['user', user]]])).overallCode;
    /** Waits for the reload whose domains (sorted) are `domains`. */
    const loaded = (domains: string[]) =>
      envoy.sluice.waitForLog(
        (r) =>
          r.msg === 'config loaded' &&
          JSON.stringify([...(r.domains as string[])].sort()) === JSON.stringify([...domains].sort()),
      );
    try {
      assert.deepEqual([await code('nested'), await code('nested')], ['OK', 'OVER_LIMIT']);
      assert.deepEqual([await code('deep'), await code('deep')], ['OK', 'OVER_LIMIT']);

      // An edit of a nested file.
      writeFileSync(join(runtime.configDir, 'sub', 'nested.yaml'), rules('edited', 2));
      await loaded(['top', 'edited', 'deep']);
      assert.deepEqual([await code('edited'), await code('edited'), await code('edited')], ['OK', 'OK', 'OVER_LIMIT']);
      assert.deepEqual([await code('nested'), await code('nested')], ['OK', 'OK'], 'the old domain is gone');

      // A subdirectory made while the service runs, and a file in it.
      mkdirSync(join(runtime.configDir, 'later', 'inner'), { recursive: true });
      writeFileSync(join(runtime.configDir, 'later', 'inner', 'later.yaml'), rules('later', 1));
      await loaded(['top', 'edited', 'deep', 'later']);
      assert.deepEqual([await code('later'), await code('later')], ['OK', 'OVER_LIMIT']);

      // A nested file removed.
      rmSync(join(runtime.configDir, 'sub', 'deeper', 'deep.yaml'));
      await loaded(['top', 'edited', 'later']);
      assert.deepEqual([await code('deep', 'v'), await code('deep', 'v')], ['OK', 'OK']);
    } finally {
      await envoy.stop();
      runtime.dispose();
    }
  },
);

it('--config DIR outside envoy mode still reads only the files directly in DIR', { timeout: 60_000 }, async () => {
  const runtime = createRuntime({ 'top.yaml': rules('top', 5) });
  mkdirSync(join(runtime.configDir, 'sub'));
  writeFileSync(join(runtime.configDir, 'sub', 'nested.yaml'), rules('nested', 1));
  const sluice = await startSluice(['--config', runtime.configDir, '--log-level', 'info']);
  const code = async (domain: string) => {
    const res = await fetch(`http://127.0.0.1:${sluice.http}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ domain, descriptors: [{ entries: [{ key: 'user', value: 'u' }] }] }),
    });
    return ((await res.json()) as { overallCode: string }).overallCode;
  };
  try {
    assert.deepEqual([await code('top'), await code('nested'), await code('nested')], ['OK', 'OK', 'OK']);
  } finally {
    await sluice.stop();
    runtime.dispose();
  }
});
