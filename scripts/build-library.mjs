// Builds the library (packages/sluice) for publishing: dist/esm (ES modules, for `import`) and dist/cjs
// (CommonJS, for `require` and for TypeScript projects that compile to CommonJS). The JavaScript is
// bundled by esbuild, one file per entry point of package.json#exports plus the chunks they share (so
// `sluice` and `sluice/redis` load one copy of what they have in common); dist/cjs is the same files
// turned into CommonJS. Declarations are one file per source (tsc), as editors show them, written once,
// in dist/cjs; dist/esm has one declaration per entry point that re-exports them (an ES module may import
// CommonJS types, and there is no default export to lose). A package.json with "type": "commonjs" in
// dist/cjs tells Node and TypeScript how to read those files.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, transform } from 'esbuild';

const lib = fileURLToPath(new URL('../packages/sluice/', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(join(lib, 'dist'), { recursive: true, force: true });
const declarations = spawnSync(process.execPath, [tsc, '-p', join(lib, 'tsconfig.cjs.json'), '--emitDeclarationOnly'], {
  stdio: 'inherit',
  cwd: lib,
});
if (declarations.status !== 0) process.exit(declarations.status ?? 1);

const pkg = JSON.parse(readFileSync(join(lib, 'package.json'), 'utf8'));
// One entry per source: two subpaths may name the same file (sluice/hono/full is sluice/hono's Node build).
const entryPoints = [
  ...new Set(
    Object.values(pkg.exports)
      .map((entry) => (typeof entry === 'object' && entry !== null ? entry['sluice-source'] : undefined))
      .filter((source) => typeof source === 'string')
      .map((source) => join(lib, source)),
  ),
];

const esm = join(lib, 'dist', 'esm');
await build({
  entryPoints,
  // Each entry keeps its path: src/stores/redis/index.ts -> dist/esm/stores/redis/index.js.
  outbase: join(lib, 'src'),
  outdir: esm,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // yaml, the frameworks and the database clients are the user's (dependencies and optional peers).
  packages: 'external',
  chunkNames: 'chunks/[name]-[hash]',
  // Whitespace and syntax only: identifiers stay, so stack traces still name the function that threw.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});

/** Every file under `dir`. */
function filesOf(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesOf(path) : [path];
  });
}

const cjs = join(lib, 'dist', 'cjs');
for (const file of filesOf(esm).filter((f) => f.endsWith('.js'))) {
  const { code } = await transform(readFileSync(file, 'utf8'), {
    format: 'cjs',
    loader: 'js',
    target: 'node20',
    minifyWhitespace: true,
  });
  const target = join(cjs, relative(esm, file));
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, code);
}
mkdirSync(cjs, { recursive: true });
writeFileSync(join(cjs, 'package.json'), '{\n  "type": "commonjs"\n}\n');

for (const entry of entryPoints) {
  const path = relative(join(lib, 'src'), entry).replace(/\.ts$/, '');
  const stub = join(esm, `${path}.d.ts`);
  const target = relative(dirname(stub), join(cjs, `${path}.js`));
  writeFileSync(stub, `export * from '${target.startsWith('.') ? target : `./${target}`}';\n`);
}

// tsc writes a declaration for every source file, but users' editors only ever open those the entry points'
// declarations import, directly or through others: the rest (the Redis scripts' assembly, the stores' internals)
// would only weigh on every install, so they are left out. Every `from '…'` and `import('…')` is followed.
const reached = new Set();
const pending = entryPoints.map((entry) => join(cjs, `${relative(join(lib, 'src'), entry).replace(/\.ts$/, '')}.d.ts`));
while (pending.length > 0) {
  const file = pending.pop();
  if (reached.has(file)) continue;
  reached.add(file);
  const text = readFileSync(file, 'utf8');
  for (const [, specifier] of text.matchAll(/(?:from\s+|import\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const base = join(dirname(file), specifier.replace(/\.js$/, ''));
    const target = [`${base}.d.ts`, join(base, 'index.d.ts')].find((path) => statSync(path, { throwIfNoEntry: false }));
    if (target === undefined) throw new Error(`${relative(lib, file)} imports ${specifier}, which has no declaration`);
    pending.push(target);
  }
}
for (const file of filesOf(cjs).filter((f) => f.endsWith('.d.ts') && !reached.has(f))) rmSync(file);
