/** Each package's package.json (exports, typesVersions, bin) stays in step with its entry files in src/. */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';

const root = resolve(import.meta.dirname, '..');
const library = join(root, 'packages', 'sluice');
const server = join(root, 'packages', 'server');

interface Target {
  types: string;
  default: string;
}
interface LibraryExport {
  'sluice-source': string;
  import: Target;
  require: Target;
}
const read = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const lib = read(library) as {
  exports: Record<string, LibraryExport | string>;
  typesVersions: Record<string, Record<string, string[]>>;
  main: string;
  types: string;
  dependencies: Record<string, string>;
};
const srv = read(server) as {
  exports: Record<string, { 'sluice-source': string; types: string; default: string } | string>;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
};

describe('sluice (the library) entry points', () => {
  const entries = Object.entries(lib.exports).filter((e): e is [string, LibraryExport] => typeof e[1] !== 'string');

  it('every export points at a source entry that exists, with matching ESM and CommonJS builds', () => {
    for (const [name, target] of entries) {
      const source = target['sluice-source'];
      assert.ok(existsSync(join(library, source)), `${name}: ${source} is missing`);
      const stem = source.replace(/^\.\/src\//, '').replace(/\.ts$/, '');
      assert.deepEqual(
        target.import,
        { types: `./dist/esm/${stem}.d.ts`, default: `./dist/esm/${stem}.js` },
        `${name}: import`,
      );
      assert.deepEqual(
        target.require,
        { types: `./dist/cjs/${stem}.d.ts`, default: `./dist/cjs/${stem}.js` },
        `${name}: require`,
      );
    }
  });

  it('moduleResolution node10 finds the types of every subpath (typesVersions) and of the root (types)', () => {
    const map = lib.typesVersions['*'] ?? {};
    for (const [name, target] of entries) {
      if (name === '.') {
        assert.equal(lib.types, target.require.types.replace(/^\.\//, './'));
        assert.equal(lib.main, target.require.default);
        continue;
      }
      assert.deepEqual(map[name.slice(2)], [target.require.types.replace(/^\.\//, '')], `${name}: typesVersions`);
    }
    assert.equal(Object.keys(map).length, entries.length - 1, 'no stale typesVersions entries');
  });

  it('every adapter is exported under its own name', () => {
    const adapters = readdirSync(join(library, 'src/adapters')).filter(
      (f) => f.endsWith('.ts') && !f.includes('.test.'),
    );
    for (const file of adapters) {
      const name = `./${file.replace(/\.ts$/, '')}`;
      assert.ok(lib.exports[name], `src/adapters/${file} is not exported as ${name}`);
    }
  });

  it('sluice/adaptive is an entry point with createAdaptiveLimiter', async () => {
    assert.ok(lib.exports['./adaptive'], './adaptive is not exported');
    const mod = (await import('sluice/adaptive')) as { createAdaptiveLimiter?: unknown };
    assert.equal(typeof mod.createAdaptiveLimiter, 'function');
  });

  it('sluice/llm is an entry point with readUsage, tapUsage, estimateInputTokens and createTokenLimiter', async () => {
    const mod = (await import('sluice/llm')) as Record<string, unknown>;
    for (const name of [
      'readUsage',
      'inspectUsage',
      'tapUsage',
      'createUsageTap',
      'estimateInputTokens',
      'createTokenLimiter',
    ])
      assert.equal(typeof mod[name], 'function', name);
  });

  it('sluice/multi-region is an entry point with createMultiRegionStore', async () => {
    assert.ok(lib.exports['./multi-region'], './multi-region is not exported');
    const mod = (await import('sluice/multi-region')) as { createMultiRegionStore?: unknown };
    assert.equal(typeof mod.createMultiRegionStore, 'function');
  });

  it('sluice/postgres and sluice/testing are entry points (the store kit)', async () => {
    const pgStore = (await import('sluice/postgres')) as { createPostgresStore?: unknown; postgresTableSql?: unknown };
    assert.equal(typeof pgStore.createPostgresStore, 'function');
    assert.equal(typeof pgStore.postgresTableSql, 'function');
    const testing = (await import('sluice/testing')) as { storeConformance?: unknown };
    assert.equal(typeof testing.storeConformance, 'function');
  });

  it('sluice/mysql and sluice/sqlite are entry points (stores on the kit)', async () => {
    const my = (await import('sluice/mysql')) as { createMySqlStore?: unknown; mySqlTableSql?: unknown };
    assert.equal(typeof my.createMySqlStore, 'function');
    assert.equal(typeof my.mySqlTableSql, 'function');
    const lite = (await import('sluice/sqlite')) as { createSqliteStore?: unknown; sqliteTableSql?: unknown };
    assert.equal(typeof lite.createSqliteStore, 'function');
    assert.equal(typeof lite.sqliteTableSql, 'function');
  });

  it('has at most one runtime dependency, yaml', () => {
    assert.deepEqual(Object.keys(lib.dependencies ?? {}), ['yaml']);
  });
});

describe('sluice-server entry points', () => {
  it('exports its source entry, and the CLI is the bin', () => {
    const main = srv.exports['.'];
    assert.ok(main && typeof main !== 'string');
    assert.ok(existsSync(join(server, main['sluice-source'])));
    assert.equal(main.default, main['sluice-source'].replace(/^\.\/src\//, './dist/').replace(/\.ts$/, '.js'));
    assert.equal(main.types, main.default.replace(/\.js$/, '.d.ts'));
    assert.equal(srv.bin.sluice, './dist/cli/main.js');
    assert.ok(existsSync(join(server, 'src/cli/main.ts')));
  });

  it('depends on the library and on a Redis client for real (not as an optional peer)', () => {
    assert.ok(srv.dependencies.sluice);
    assert.ok(srv.dependencies.ioredis);
  });
});
