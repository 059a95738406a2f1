/** package.json#exports and #bin stay in step with the entry files in src/. */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';

const root = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types: string; default: string }>;
  bin: Record<string, string>;
};
const toSource = (dist: string) => dist.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts');

describe('package entry points', () => {
  it('every export points at a source entry that exists, with matching types', () => {
    for (const [name, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string') continue; // ./package.json
      assert.ok(existsSync(join(root, toSource(target.default))), `${name}: ${toSource(target.default)} is missing`);
      assert.equal(target.types, target.default.replace(/\.js$/, '.d.ts'), `${name}: types and code disagree`);
    }
  });

  it('every adapter is exported under its own name, and the CLI is the bin', () => {
    const adapters = readdirSync(join(root, 'src/adapters')).filter((f) => f.endsWith('.ts') && !f.includes('.test.'));
    for (const file of adapters) {
      const name = `./${file.replace(/\.ts$/, '')}`;
      assert.ok(pkg.exports[name], `src/adapters/${file} is not exported as ${name}`);
    }
    assert.equal(toSource(pkg.bin.sluice as string), 'src/cli/main.ts');
  });
});
