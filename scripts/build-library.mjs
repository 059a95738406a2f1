// Builds the library (packages/sluice) twice from the same sources: dist/esm (ES modules, for `import`)
// and dist/cjs (CommonJS, for `require` and for TypeScript projects that compile to CommonJS). A
// package.json with "type": "commonjs" in dist/cjs tells Node and TypeScript how to read those files.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const lib = fileURLToPath(new URL('../packages/sluice/', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(join(lib, 'dist'), { recursive: true, force: true });
for (const project of ['tsconfig.build.json', 'tsconfig.cjs.json']) {
  const run = spawnSync(process.execPath, [tsc, '-p', join(lib, project)], { stdio: 'inherit', cwd: lib });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
mkdirSync(join(lib, 'dist', 'cjs'), { recursive: true });
writeFileSync(join(lib, 'dist', 'cjs', 'package.json'), '{\n  "type": "commonjs"\n}\n');
