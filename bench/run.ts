/**
 * `npm run bench`: compiles sluice and the benchmarks with tsc (to .bench-out/), then runs every
 * benchmark one after another, each in its own process (so one does not warm up or fill the heap of
 * the next), and prints their tables.
 *
 * Compiled, because that is what users run: tsx's on-the-fly transform wraps every named closure in a
 * `__name()` call that costs ~200 ns each time the closure is created, which would charge sluice (and
 * not the peers, shipped as JavaScript) for an artefact of the test runner.
 *
 *   npm run bench            # all of them
 *   npm run bench -- core    # only those whose name contains "core"
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const root = resolve(dir, '..');
const out = join(root, '.bench-out');
// The compiled server imports `sluice`, which resolves to the library's build: build it first.
for (const args of [
  [join(root, 'scripts/build-library.mjs')],
  [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.bench.json'],
]) {
  const build = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
// The compiled service finds its .proto files, dashboard and package.json beside it, as in a package.
for (const asset of ['proto', 'dashboard', 'package.json']) {
  const link = join(out, 'packages', 'server', asset);
  if (!existsSync(link)) symlinkSync(join(root, 'packages', 'server', asset), link);
}
const order = ['core', 'redis', 'http', 'service'];
const filters = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts')
  .map((f) => f.slice(0, -3))
  .filter((name) => filters.length === 0 || filters.some((x) => name.includes(x)))
  .sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99) || a.localeCompare(b));

let failed = 0;
for (const name of files) {
  console.log(`\n## bench/${name}.ts\n`);
  const run = spawnSync(process.execPath, ['--expose-gc', join(out, 'bench', `${name}.js`)], { stdio: 'inherit' });
  if (run.status !== 0) {
    failed++;
    console.log(`bench/${name}.ts exited with ${run.status ?? run.signal}`);
  }
}
process.exit(failed > 0 ? 1 : 0);
