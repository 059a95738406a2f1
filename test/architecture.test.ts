/**
 * The dependency direction of CONVENTIONS.md, checked from the import statements: the library's layers
 * import only the layers below them, the library never imports the server package, and the server
 * uses the library only through its public entry points.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

const root = resolve(import.meta.dirname, '..');
const librarySrc = join(root, 'packages', 'sluice', 'src');
const serverSrc = join(root, 'packages', 'server', 'src');
const libraryPkg = JSON.parse(readFileSync(join(root, 'packages', 'sluice', 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
};

/** Which library layers each layer may import (besides itself). `index` is the package's root entry. */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  algorithms: ['core'],
  stores: ['core', 'algorithms'],
  limiter: ['core', 'algorithms', 'stores'],
  rules: ['core', 'algorithms', 'limiter', 'stores'],
  adaptive: ['core'],
  // sluice/llm: usage readers (pure) now; token limiters build on the limiter and stores.
  llm: ['core', 'algorithms', 'limiter', 'stores'],
  http: ['core', 'limiter', 'rules', 'stores', 'adaptive', 'llm'],
  adapters: ['http', 'limiter', 'core', 'stores', 'adaptive'],
  client: ['core', 'algorithms', 'limiter', 'stores'],
  index: ['core', 'algorithms', 'limiter', 'stores'],
  // sluice/testing: the store kit's suites, run on any store (node:test is its one node:* import besides assert).
  testing: ['core', 'algorithms', 'stores'],
};
/**
 * The service's layers, highest first: each folder of packages/server/src may import only the folders
 * after it in this list (and itself). `index` is the package's public entry.
 */
const SERVER_LAYERS = [
  'cli',
  'index',
  'app',
  'tools',
  'protocols',
  'clients',
  'rls',
  'core',
  'backends',
  'config',
  'observability',
  'support',
] as const;
/** The library's adapter entry points, which the server must not use (it speaks HTTP itself). */
const ADAPTER_ENTRIES = ['sluice/express', 'sluice/fastify', 'sluice/koa', 'sluice/hono', 'sluice/node', 'sluice/nest'];

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
  const statement = /^\s*(import|export)\s+(type\s+)?[^'";]*?from\s+['"]([^'"]+)['"]/gm;
  for (const m of text.matchAll(statement)) found.push({ specifier: m[3] as string, typeOnly: m[2] !== undefined });
  for (const m of text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm))
    found.push({ specifier: m[1] as string, typeOnly: false });
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g))
    found.push({ specifier: m[1] as string, typeOnly: false });
  return found;
}

const packageName = (specifier: string) =>
  specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : (specifier.split('/')[0] as string);

const layerIn = (base: string, file: string, top: string) => {
  const rel = relative(base, file);
  return rel.includes('/') ? (rel.split('/')[0] as string) : top;
};
const libraryLayer = (file: string) => layerIn(librarySrc, file, 'index');
const serverLayer = (file: string) => layerIn(serverSrc, file, 'index');

describe('architecture: the library (packages/sluice)', () => {
  const files = sources(librarySrc);

  it('every layer imports only the layers below it, and nothing outside the library', () => {
    const problems: string[] = [];
    for (const file of files) {
      const layer = libraryLayer(file);
      const allowed = ALLOWED[layer];
      if (allowed === undefined) {
        problems.push(
          `${relative(root, file)}: src/${layer} is not a known layer (add it to CONVENTIONS and this test)`,
        );
        continue;
      }
      for (const { specifier } of importsOf(file)) {
        if (packageName(specifier) === 'sluice-server' || packageName(specifier) === 'sluice')
          problems.push(
            `${relative(root, file)} imports ${specifier}: the library imports itself only by relative path`,
          );
        if (!specifier.startsWith('.')) continue;
        const target = resolve(dirname(file), specifier);
        if (!target.startsWith(librarySrc)) {
          problems.push(`${relative(root, file)} reaches outside the library (${specifier})`);
          continue;
        }
        const to = libraryLayer(target);
        if (to !== layer && !allowed.includes(to))
          problems.push(`${relative(root, file)} imports src/${to} (${specifier})`);
        // An adapter may have a folder of its own parts (adapters/nest/), but never use another adapter.
        if (
          layer === 'adapters' &&
          dirname(file) === join(librarySrc, 'adapters') &&
          dirname(target) === dirname(file)
        ) {
          problems.push(`${relative(root, file)}: adapters never import each other (${specifier})`);
        }
      }
    }
    assert.deepEqual(problems, []);
  });

  it('core and algorithms are pure: no node:* modules, no clock reads in algorithms', () => {
    const problems: string[] = [];
    for (const file of files.filter((f) => ['core', 'algorithms'].includes(libraryLayer(f)))) {
      for (const { specifier } of importsOf(file))
        if (specifier.startsWith('node:')) problems.push(`${relative(root, file)}: ${specifier}`);
      if (libraryLayer(file) === 'algorithms' && /Date\.now|setTimeout|setInterval/.test(readFileSync(file, 'utf8'))) {
        problems.push(`${relative(root, file)} reads the clock or sets a timer`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('imports no package at runtime but yaml: frameworks and Redis clients only as types', () => {
    const problems: string[] = [];
    // Nest's dependency injection and exception filters work on its own classes and decorators, so
    // sluice/nest (and only it) loads them: @nestjs/common; lazily, @nestjs/websockets for gateways and
    // graphql for resolvers.
    const nest = join(librarySrc, 'adapters', 'nest');
    const NEST_RUNTIME = new Set(['@nestjs/common', '@nestjs/websockets', 'graphql']);
    for (const file of files) {
      for (const { specifier, typeOnly } of importsOf(file)) {
        if (specifier.startsWith('.') || specifier.startsWith('node:') || typeOnly) continue;
        if (file.startsWith(nest) && NEST_RUNTIME.has(packageName(specifier) as string)) continue;
        if (packageName(specifier) !== 'yaml') problems.push(`${relative(root, file)}: runtime import of ${specifier}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('never reads the environment or handles signals (only the server does)', () => {
    const problems = files
      .filter((f) => /process\.env|process\.on\(\s*['"]SIG/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(root, f));
    assert.deepEqual(problems, []);
  });

  for (const [what, path] of [
    ['the Hono adapter', 'adapters/hono.ts'],
    ['the remote store', 'stores/remote/index.ts'],
  ] as const)
    it(`${what} runs beyond Node: nothing it loads imports node:*`, () => {
      const entry = join(librarySrc, path);
      assert.ok(existsSync(entry), `src/${path} exists`);
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
      assert.ok(seen.size > 3, 'the walk followed the entry into the modules it loads');
      assert.deepEqual(problems, []);
    });
});

describe('architecture: the service (packages/server)', () => {
  const files = sources(serverSrc);
  const publicEntries = new Set(
    Object.keys(libraryPkg.exports)
      .filter((k) => k !== './package.json')
      .map((k) => (k === '.' ? 'sluice' : `sluice/${k.slice(2)}`)),
  );

  it('uses the library only through its public entry points, and never its adapters', () => {
    const problems: string[] = [];
    for (const file of files) {
      for (const { specifier } of importsOf(file)) {
        if (specifier.startsWith('.')) {
          if (!resolve(dirname(file), specifier).startsWith(serverSrc))
            problems.push(`${relative(root, file)} reaches outside its package (${specifier})`);
          continue;
        }
        if (packageName(specifier) !== 'sluice') continue;
        if (!publicEntries.has(specifier)) problems.push(`${relative(root, file)}: ${specifier} is not a public entry`);
        if (ADAPTER_ENTRIES.includes(specifier))
          problems.push(`${relative(root, file)}: imports an adapter (${specifier})`);
      }
    }
    assert.ok(files.length > 20);
    assert.deepEqual(problems, []);
  });

  it('every folder imports only the layers below it (cli -> app -> protocols -> rls -> core -> … -> support)', () => {
    const problems: string[] = [];
    const rank = (layer: string) => SERVER_LAYERS.indexOf(layer as (typeof SERVER_LAYERS)[number]);
    for (const file of files) {
      const layer = serverLayer(file);
      if (rank(layer) < 0) {
        problems.push(`${relative(root, file)}: src/${layer} is not a known layer (add it to SERVER_LAYERS)`);
        continue;
      }
      for (const { specifier } of importsOf(file)) {
        if (!specifier.startsWith('.')) continue;
        const to = serverLayer(resolve(dirname(file), specifier));
        if (rank(to) < rank(layer)) problems.push(`${relative(root, file)} (${layer}) imports ${to} (${specifier})`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('has no loose files beside the layers but the entry, and no file beside a folder of its name', () => {
    const loose = readdirSync(serverSrc).filter((n) => n.endsWith('.ts') && n !== 'index.ts');
    assert.deepEqual(loose, []);
    const twins = [serverSrc, ...files.map(dirname)]
      .filter((dir, i, all) => all.indexOf(dir) === i)
      .flatMap((dir) =>
        readdirSync(dir)
          .filter((n) => n.endsWith('.ts') && existsSync(join(dir, n.replace(/\.ts$/, ''))))
          .map((n) => relative(root, join(dir, n))),
      );
    assert.deepEqual(twins, []);
  });
});

describe('architecture: no import circles', () => {
  for (const [name, dir] of [
    ['the library', librarySrc],
    ['the service', serverSrc],
  ] as const)
    it(`${name} has no circle of imports, type imports included`, () => {
      const graph = new Map<string, string[]>();
      for (const file of sources(dir))
        graph.set(
          file,
          importsOf(file)
            .filter((i) => i.specifier.startsWith('.'))
            .map((i) => resolve(dirname(file), i.specifier).replace(/\.js$/, '.ts'))
            .filter((t) => t !== file && existsSync(t)),
        );
      const circles: string[] = [];
      const state = new Map<string, 'open' | 'done'>();
      const stack: string[] = [];
      const visit = (file: string) => {
        state.set(file, 'open');
        stack.push(file);
        for (const next of graph.get(file) ?? []) {
          if (state.get(next) === 'open') {
            const loop = stack.slice(stack.indexOf(next)).map((f) => relative(dir, f));
            circles.push([...loop, relative(dir, next)].join(' -> '));
          } else if (!state.has(next)) visit(next);
        }
        stack.pop();
        state.set(file, 'done');
      };
      for (const file of graph.keys()) if (!state.has(file)) visit(file);
      assert.deepEqual(circles, []);
    });
});
