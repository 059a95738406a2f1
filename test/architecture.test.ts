/**
 * The dependency direction of CONVENTIONS.md, checked from the import statements, and the package's
 * entry points kept in step with package.json#exports.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

const root = resolve(import.meta.dirname, '..');
const src = join(root, 'src');

/** Which layers each layer may import (besides itself). `index` is the package's root entry. */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  algorithms: ['core'],
  stores: ['core', 'algorithms'],
  limiter: ['core', 'algorithms', 'stores'],
  rules: ['core', 'algorithms', 'limiter', 'stores'],
  http: ['core', 'limiter', 'rules', 'stores'],
  adapters: ['http', 'limiter', 'core', 'stores'],
  client: ['core', 'algorithms', 'limiter', 'stores'],
  simulate: ['core', 'algorithms', 'limiter', 'stores'],
  server: ['core', 'algorithms', 'limiter', 'stores', 'rules', 'http', 'client'],
  cli: ['core', 'algorithms', 'limiter', 'stores', 'rules', 'http', 'client', 'server', 'simulate'],
  index: ['core', 'algorithms', 'limiter', 'stores'],
};
const FRAMEWORKS = ['express', 'fastify', 'koa', 'hono', 'ioredis', 'redis', '@hono/node-server'];
/** Only these layers may read the environment, open ports or handle signals. */
const EFFECTFUL = new Set(['server', 'cli']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

interface Import {
  specifier: string;
  typeOnly: boolean;
}

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const found: Import[] = [];
  const statement = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]/gm;
  for (const m of text.matchAll(statement)) found.push({ specifier: m[3] as string, typeOnly: m[2] !== undefined });
  for (const m of text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm))
    found.push({ specifier: m[1] as string, typeOnly: false });
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g))
    found.push({ specifier: m[1] as string, typeOnly: false });
  return found;
}

const layerOf = (file: string) => {
  const rel = relative(src, file);
  return rel.includes('/') ? (rel.split('/')[0] as string) : 'index';
};

describe('architecture', () => {
  const files = sources(src);

  it('every layer imports only the layers below it', () => {
    const problems: string[] = [];
    for (const file of files) {
      const layer = layerOf(file);
      const allowed = ALLOWED[layer];
      if (allowed === undefined) {
        problems.push(
          `${relative(root, file)}: src/${layer} is not a known layer (add it to CONVENTIONS and this test)`,
        );
        continue;
      }
      for (const { specifier } of importsOf(file)) {
        if (!specifier.startsWith('.')) continue;
        const target = resolve(dirname(file), specifier);
        if (!target.startsWith(src)) continue;
        const to = layerOf(target);
        if (to !== layer && !allowed.includes(to))
          problems.push(`${relative(root, file)} imports src/${to} (${specifier})`);
        if (layer === 'adapters' && to === 'adapters' && dirname(target) === dirname(file)) {
          problems.push(`${relative(root, file)}: adapters never import each other (${specifier})`);
        }
      }
    }
    assert.deepEqual(problems, []);
  });

  it('core and algorithms are pure: no node:* modules, no clock reads in algorithms', () => {
    const problems: string[] = [];
    for (const file of files.filter((f) => ['core', 'algorithms'].includes(layerOf(f)))) {
      for (const { specifier } of importsOf(file))
        if (specifier.startsWith('node:')) problems.push(`${relative(root, file)}: ${specifier}`);
      if (layerOf(file) === 'algorithms' && /Date\.now|setTimeout|setInterval/.test(readFileSync(file, 'utf8'))) {
        problems.push(`${relative(root, file)} reads the clock or sets a timer`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('the library never imports a framework or a Redis client at runtime', () => {
    const problems: string[] = [];
    for (const file of files.filter((f) => !['server', 'cli'].includes(layerOf(f)))) {
      for (const { specifier, typeOnly } of importsOf(file)) {
        const pkg = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
        if (!typeOnly && FRAMEWORKS.includes(pkg as string))
          problems.push(`${relative(root, file)}: runtime import of ${specifier}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('only server/ and cli/ read the environment or handle signals', () => {
    const problems = files
      .filter((f) => !EFFECTFUL.has(layerOf(f)))
      .filter((f) => /process\.env|process\.on\(\s*['"]SIG/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(root, f));
    assert.deepEqual(problems, []);
  });

  it('the Hono adapter runs beyond Node: nothing it loads imports node:*', () => {
    const entry = join(src, 'adapters', 'hono.ts');
    assert.ok(existsSync(entry), 'src/adapters/hono.ts exists');
    const seen = new Set<string>();
    const problems: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const { specifier, typeOnly } of importsOf(file)) {
        if (typeOnly) continue;
        if (specifier.startsWith('node:')) problems.push(`${relative(root, file)}: ${specifier}`);
        if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier).replace(/\.js$/, '.ts'));
      }
    };
    visit(entry);
    assert.deepEqual(problems, []);
  });
});
