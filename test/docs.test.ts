/**
 * The examples in docs/ run. Every code block fenced as ```ts run is executed as its own program (its
 * `sluice`, `sluice/<entry>` and `sluice-server` imports resolve to the sources through the test run's
 * `sluice-source` condition), and must exit 0 within 30 s. Programs
 * are written inside the project (so `import ... from 'ioredis'` resolves as in an application) and
 * get REDIS_URL pointing at a redis-server this test starts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type RedisServerHandle, startRedis } from './helpers/redis-server.js';

const root = resolve(import.meta.dirname, '..');
const docs = join(root, 'docs');
const cache = join(root, 'node_modules', '.cache');
mkdirSync(cache, { recursive: true });
const work = mkdtempSync(join(cache, 'sluice-docs-'));
// The project's compiler options apply to the examples too (tsx reads only the tsconfig whose `include`
// matches a file): decorators in the NestJS examples compile as in the project's own tests.
const tsconfig = join(work, 'tsconfig.json');
writeFileSync(tsconfig, JSON.stringify({ extends: join(root, 'tsconfig.json'), include: ['./*.mts'] }));
let redis: RedisServerHandle | undefined;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  rmSync(work, { recursive: true, force: true });
  await redis?.stop();
});

describe('docs examples run', () => {
  for (const file of readdirSync(docs).filter((f) => f.endsWith('.md'))) {
    const text = readFileSync(join(docs, file), 'utf8');
    const blocks = [...text.matchAll(/^```ts run\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
    blocks.forEach((code, i) => {
      it(`docs/${file} example ${i + 1}`, () => {
        const path = join(work, `${file.replace(/\W/g, '_')}-${i + 1}.mts`);
        writeFileSync(path, code);
        const run = spawnSync(process.execPath, ['--import', 'tsx', path], {
          cwd: root,
          env: { ...process.env, TSX_TSCONFIG_PATH: tsconfig },
          encoding: 'utf8',
          timeout: 30_000,
        });
        assert.equal(run.status, 0, `exit ${run.status ?? run.signal}\n${run.stderr}`);
      });
    });
  }
});
