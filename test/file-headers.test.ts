/**
 * Every source file of both packages opens with a comment saying what it is: a reader opening a folder
 * learns each file's one idea from its first line.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

const root = resolve(import.meta.dirname, '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The first line of `text` that says something (a shebang does not). */
function firstLine(text: string): string {
  return text.split('\n').find((line) => line.trim() !== '' && !line.startsWith('#!')) ?? '';
}

describe('file headers', () => {
  for (const pkg of ['sluice', 'server']) {
    it(`every source file of packages/${pkg} opens with a comment`, () => {
      const missing = sourceFiles(join(root, 'packages', pkg, 'src')).filter((file) => {
        const first = firstLine(readFileSync(file, 'utf8')).trimStart();
        return !first.startsWith('/*') && !first.startsWith('//');
      });
      assert.deepEqual(
        missing.map((file) => relative(root, file)),
        [],
        'open each with /** What this file is, in a line or two. */',
      );
    });
  }
});
