/**
 * `npm run bench`: runs every benchmark in bench/ one after another, each in its own process (so one
 * does not warm up or fill the heap of the next), and prints their tables.
 *
 *   npm run bench            # all of them
 *   npm run bench -- core    # only those whose name contains "core"
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
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
  const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', `${dir}${name}.ts`], { stdio: 'inherit' });
  if (run.status !== 0) {
    failed++;
    console.log(`bench/${name}.ts exited with ${run.status ?? run.signal}`);
  }
}
process.exit(failed > 0 ? 1 : 0);
