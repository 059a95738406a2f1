// Node 20's test runner does not discover .ts files, so list them here and hand them to
// `node --import tsx --test`. Arguments narrow the run to files whose path contains one of them.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const roots = ['packages/sluice/src', 'packages/sluice/test', 'packages/server/src', 'packages/server/test', 'test'];
const filters = process.argv.slice(2);

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'fixtures') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...walk(path));
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

const files = roots
  .flatMap(walk)
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched', filters);
  process.exit(1);
}
const concurrency = process.env.SLUICE_TEST_CONCURRENCY ?? '2';
// `sluice` and `sluice-server` resolve to their TypeScript sources (the `sluice-source` export condition),
// here and in every process a test starts, so tests never run against a stale build.
const nodeOptions = [process.env.NODE_OPTIONS, '--conditions=sluice-source'].filter(Boolean).join(' ');
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files],
  { stdio: 'inherit', env: { ...process.env, NODE_OPTIONS: nodeOptions } },
);
process.exit(result.status ?? 1);
