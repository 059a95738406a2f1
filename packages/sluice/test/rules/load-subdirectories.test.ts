/**
 * `loadRules(dir, { subdirectories: true })` reads the tree below a directory as envoy ratelimit's runtime loader
 * walks it (Go's filepath.Walk), within a depth bound; without the option only the directory's own files.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadRules } from '../../src/rules/index.js';

const rules = (domain: string) =>
  `domain: ${domain}\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n`;

describe('loadRules with subdirectories', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-subdirs-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const put = (path: string, domain: string) => {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), rules(domain));
  };
  put('b.yaml', 'b');
  put('a/z.yaml', 'az');
  put('a/b/c.yaml', 'abc');
  put('.hidden/x.yaml', 'hidden');
  put('1/2/3/4/5/6/7/8/eight.yaml', 'eight');
  put('1/2/3/4/5/6/7/8/9/nine.yaml', 'nine');
  symlinkSync(join(dir, 'a'), join(dir, 'link-to-a'));
  symlinkSync(dir, join(dir, 'a', 'loop'));
  symlinkSync(join(dir, 'loop.yaml'), join(dir, 'loop.yaml'));

  it('reads every level down to 8, in filepath.Walk order, skipping dot-directories and symlinked directories', async () => {
    const loaded = await loadRules(dir, { subdirectories: true });
    assert.ok(loaded.ok, JSON.stringify(loaded));
    assert.deepEqual(
      loaded.files.map((f) => f.slice(dir.length + 1)),
      ['1/2/3/4/5/6/7/8/eight.yaml', 'a/b/c.yaml', 'a/z.yaml', 'b.yaml'],
    );
    assert.deepEqual([...loaded.ruleSet.domains.keys()].sort(), ['abc', 'az', 'b', 'eight']);
  });

  it('without the option, only the files directly in the directory (as before)', async () => {
    const loaded = await loadRules(dir);
    assert.ok(loaded.ok, JSON.stringify(loaded));
    assert.deepEqual(
      loaded.files.map((f) => f.slice(dir.length + 1)),
      ['b.yaml'],
    );
  });
});
