/**
 * The decision hook's cost with no subscriber, counted in instructions rather than timed (timings of a
 * ~150 ns check swing by 20 % between runs on a shared machine; instruction counts repeat to within a
 * fraction of a percent): `limiter.checkSync` and `await limiter.check()` on the memory store (token bucket,
 * 1,024 keys) in two source trees, each run under valgrind's callgrind twice, with SMALL and LARGE checks; the
 * difference of the two totals over the difference of the counts is the instructions per check, with the
 * process's start, compilation and warm-up taken out. Make the "before" tree with
 * `git worktree add /tmp/before da49298~1` (the commit before the hook).
 *
 *   node --import tsx bench/hook-instructions.ts /tmp/before .      # needs valgrind
 */
import { execFile, execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

type Limiter = {
  checkSync(key: string): { allowed: boolean };
  check(key: string): Promise<{ allowed: boolean }>;
};

const SMALL = 200_000;
const LARGE = 1_200_000;

/** In the child: `checks` checks of one limiter (the start and the warm-up are the same in both runs). */
async function child(tree: string, checks: number, awaited: boolean): Promise<void> {
  const { createLimiter } = (await import(`${tree}/packages/sluice/src/index.ts`)) as {
    createLimiter(options: object): Limiter;
  };
  const limiter = createLimiter({ limit: 1_000_000_000, period: '1h', algorithm: 'token-bucket' });
  let allowed = 0;
  for (let i = 0; i < checks; i++) {
    const key = `k${i & 1023}`;
    if ((awaited ? await limiter.check(key) : limiter.checkSync(key)).allowed) allowed++;
  }
  if (allowed !== checks) throw new Error('a check was refused: the bench counts allowed checks only');
}

/** Instructions of one child process running `checks` checks, as callgrind reports them. */
async function totalInstructions(tree: string, checks: number, awaited: boolean): Promise<number> {
  const self = fileURLToPath(import.meta.url);
  const args = ['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, '--single-threaded'];
  args.push('--import', 'tsx', self, '--child', tree, String(checks), awaited ? 'await' : 'sync');
  const { stderr } = await promisify(execFile)('valgrind', args, { maxBuffer: 1 << 24 });
  const collected = /Collected : (\d+)/.exec(stderr);
  if (collected === null) throw new Error(`no callgrind total:\n${stderr.slice(-2000)}`);
  return Number(collected[1]);
}

async function perCheck(tree: string, awaited: boolean): Promise<number> {
  const [small, large] = await Promise.all([
    totalInstructions(tree, SMALL, awaited),
    totalInstructions(tree, LARGE, awaited),
  ]);
  return (large - small) / (LARGE - SMALL);
}

function hasValgrind(): boolean {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

if (process.argv[2] === '--child') {
  await child(process.argv[3] as string, Number(process.argv[4]), process.argv[5] === 'await');
} else {
  const trees = process.argv.slice(2, 4).map((dir) => resolve(dir));
  if (trees.length !== 2 || !hasValgrind()) {
    // `npm run bench` runs every file with no arguments: this one needs two trees and valgrind.
    console.log('bench/hook-instructions.ts: skipped (usage: BEFORE_TREE AFTER_TREE, with valgrind installed)');
    process.exit(0);
  }
  for (const awaited of [false, true]) {
    const [before, after] = [await perCheck(trees[0] as string, awaited), await perCheck(trees[1] as string, awaited)];
    const name = awaited ? 'await check' : 'checkSync';
    console.log(
      `${name}: before ${before.toFixed(0)}, after ${after.toFixed(0)} instructions a check, after/before ${(after / before).toFixed(3)}`,
    );
  }
}
