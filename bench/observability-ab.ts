/**
 * The decision hook's cost with no subscriber: `limiter.checkSync` and `await limiter.check()` on the
 * memory store (token bucket, 1,024 keys) in two source trees, alternating in one process, 20 rounds of
 * 1,000,000 checks each; the median ns per check of each and their ratio. Make the "before" tree with
 * `git worktree add /tmp/before da49298~1` (the commit before the hook).
 *
 *   node --import tsx bench/observability-ab.ts /tmp/before .
 */
import { resolve } from 'node:path';

type Limiter = {
  checkSync(key: string): { allowed: boolean };
  check(key: string): Promise<{ allowed: boolean }>;
};
type Library = { createLimiter(options: object): Limiter };

const ROUNDS = 20;
const CHECKS = 1_000_000;
const trees = process.argv.slice(2, 4).map((dir) => resolve(dir));
if (trees.length !== 2) {
  // `npm run bench` runs every file with no arguments: this one needs the two trees.
  console.log('bench/observability-ab.ts: skipped (usage: BEFORE_TREE AFTER_TREE)');
  process.exit(0);
}
const libraries = (await Promise.all(trees.map((dir) => import(`${dir}/packages/sluice/src/index.ts`)))) as Library[];

async function nsPerCheck(library: Library, n: number, awaited: boolean): Promise<number> {
  const limiter = library.createLimiter({ limit: 1_000_000_000, period: '1h', algorithm: 'token-bucket' });
  let allowed = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const key = `k${i & 1023}`;
    if ((awaited ? await limiter.check(key) : limiter.checkSync(key)).allowed) allowed++;
  }
  const ns = Number(process.hrtime.bigint() - start);
  if (allowed !== n) throw new Error('a check was refused: the bench measures allowed checks only');
  return ns / n;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

for (const awaited of [false, true]) {
  for (const library of libraries) await nsPerCheck(library, CHECKS / 2, awaited);
  const runs: number[][] = [[], []];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, library] of libraries.entries()) runs[i]?.push(await nsPerCheck(library, CHECKS, awaited));
  }
  const [before, after] = runs.map(median) as [number, number];
  const name = awaited ? 'await check' : 'checkSync';
  console.log(
    `${name}: before ${before.toFixed(1)} ns, after ${after.toFixed(1)} ns, after/before ${(after / before).toFixed(3)}`,
  );
}
