/**
 * What users install: `npm pack` both packages, install each tarball into a fresh project (from the
 * tarballs, their dependencies from npm's cache where it has them: `--prefer-offline`, since `npm ci`
 * caches tarballs but not the registry metadata a fresh install resolves versions with), and use it the way users do — import and require every entry
 * point, type-check a consumer under every moduleResolution, and run `sluice serve` from the server
 * package on the memory store and on Redis.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { type RedisServerHandle, startRedis } from './helpers/redis-server.js';

const root = resolve(import.meta.dirname, '..');
const work = mkdtempSync(join(tmpdir(), 'sluice-pack-'));
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const libraryPkg = JSON.parse(readFileSync(join(root, 'packages', 'sluice', 'package.json'), 'utf8')) as {
  version: string;
  exports: Record<string, unknown>;
};
const entries = Object.keys(libraryPkg.exports)
  .filter((k) => k !== './package.json')
  .map((k) => (k === '.' ? 'sluice' : `sluice/${k.slice(2)}`));

/** The environment of every command here: no test-runner source condition, no service settings. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  env.NODE_OPTIONS = (env.NODE_OPTIONS ?? '').replace(/--conditions=sluice-source/g, '').trim();
  for (const name of ['REDIS_URL', 'SLUICE_CONFIG', 'SLUICE_ADMIN_TOKEN', 'PROXY_PORT', 'PORT', 'GRPC_PORT'])
    delete env[name];
  for (const name of Object.keys(env)) if (name.startsWith('npm_')) delete env[name];
  return env;
}

function run(command: string, args: readonly string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, env: cleanEnv(), encoding: 'utf8', timeout: 240_000 });
  assert.equal(result.status, 0, `${command} ${args.join(' ')} in ${cwd}\n${result.stdout}\n${result.stderr}`);
  return `${result.stdout}\n${result.stderr}`;
}

function project(name: string, pkg: Record<string, unknown>): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, ...pkg }));
  return dir;
}

/** What a directory takes on disk (allocated blocks, as `du` counts), every file under it; reported. */
function diskBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) continue;
    total += stat.isDirectory() ? diskBytes(path) : stat.blocks * 512;
  }
  return total;
}

/** Installed size goal of the library alone (issue 38: express-rate-limit is 184 KB, @upstash/ratelimit 464 KB). */
const INSTALLED_GOAL = 1.5 * 1024 * 1024;
/** What the edge path may add to a Worker over Hono alone: esbuild, minified ESM, gzipped. */
const EDGE_GOAL = 12 * 1024;

/** The gzipped size of `source` bundled for an edge runtime from `dir` (minified ESM, as a Worker is built). */
async function edgeBytes(dir: string, source: string): Promise<number> {
  const result = await build({
    stdin: { contents: source, resolveDir: dir, loader: 'ts' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    conditions: ['workerd', 'worker', 'browser'],
    // Hono is not installed in the fresh project: take the repository's.
    nodePaths: [join(root, 'node_modules')],
    write: false,
    logLevel: 'silent',
  });
  return gzipSync((result.outputFiles[0] as { contents: Uint8Array }).contents).length;
}

function duBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) continue;
    total += stat.isDirectory() ? duBytes(path) : stat.size;
  }
  return total;
}

/** Installed packages of a project: every package.json under node_modules (scoped and nested included). */
function installedPackages(dir: string): string[] {
  const found: string[] = [];
  const walk = (modules: string) => {
    for (const name of readdirSync(modules)) {
      if (name.startsWith('.')) continue;
      if (name.startsWith('@')) {
        for (const scoped of readdirSync(join(modules, name))) visit(join(modules, name, scoped), `${name}/${scoped}`);
      } else visit(join(modules, name), name);
    }
  };
  const visit = (path: string, name: string) => {
    found.push(name);
    const nested = join(path, 'node_modules');
    if (statSync(nested, { throwIfNoEntry: false })?.isDirectory()) walk(nested);
  };
  walk(join(dir, 'node_modules'));
  return found.sort();
}

let libraryTarball = '';
let serverTarball = '';

before(() => {
  const out = run('npm', ['pack', '--silent', '--pack-destination', work, '-w', 'sluice', '-w', 'sluice-server'], root);
  const names = readdirSync(work).filter((f) => f.endsWith('.tgz'));
  libraryTarball = join(work, names.find((n) => n.startsWith('sluice-0') || /^sluice-\d/.test(n)) ?? '');
  serverTarball = join(work, names.find((n) => n.startsWith('sluice-server-')) ?? '');
  assert.ok(names.length === 2, `two tarballs: ${names.join(', ')}\n${out}`);
});
after(() => rmSync(work, { recursive: true, force: true }));

describe('the sluice tarball in a fresh project', { timeout: 300_000 }, () => {
  let app = '';
  let installLog = '';
  before(() => {
    app = project('library-app', { type: 'module' });
    installLog = run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', libraryTarball], app);
  });

  it('installs two packages, sluice and yaml, with no engine warning', () => {
    assert.deepEqual(installedPackages(app), ['sluice', 'yaml']);
    assert.doesNotMatch(installLog, /EBADENGINE/);
    const bytes = duBytes(join(app, 'node_modules'));
    console.log(`library install: 2 packages, ${(bytes / 1024).toFixed(0)} KiB on disk`);
    assert.ok(bytes < 5 * 1024 * 1024, `the library installs small (${bytes} bytes)`);
  });

  it('ships no install scripts (npm 11 warns about every one) and no sources or maps', () => {
    const pkg = JSON.parse(readFileSync(join(app, 'node_modules', 'sluice', 'package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare']) {
      assert.equal(pkg.scripts?.[script], undefined, `no ${script} script in the tarball`);
    }
    assert.doesNotMatch(installLog, /install-scripts/);
    assert.equal(statSync(join(app, 'node_modules', 'sluice', 'src'), { throwIfNoEntry: false }), undefined);
  });

  // npm's "unpacked size": what the files hold (on disk, 4 KiB blocks add ~0.7 MB for ~240 small files).
  it(`installs within ${INSTALLED_GOAL / 1024 / 1024} MB (unpacked size)`, () => {
    const dir = join(app, 'node_modules', 'sluice');
    const bytes = duBytes(dir);
    console.log(
      `sluice installed: ${(bytes / 1024).toFixed(0)} KiB of files, ${(diskBytes(dir) / 1024).toFixed(0)} KiB on disk`,
    );
    assert.ok(bytes <= INSTALLED_GOAL, `${bytes} bytes`);
  });

  it('sluice/remote adds at most 12 KB gzipped to an edge bundle', async () => {
    const bytes = await edgeBytes(
      app,
      "import { createRemoteStore } from 'sluice/remote';\nexport const store = createRemoteStore({ url: 'http://127.0.0.1:8080' });",
    );
    console.log(`sluice/remote in an edge bundle: ${(bytes / 1024).toFixed(1)} KiB gzipped`);
    assert.ok(bytes <= EDGE_GOAL, `${bytes} bytes gzipped`);
  });

  // Where it goes: `node scripts/edge-size.mjs` (minified bytes by folder and file, from src). Under the Workers
  // conditions sluice/hono is its edge build (adapters/hono/edge.ts); sluice/hono/full, every option, is measured
  // beside it for the docs' table.
  const hono =
    "import { Hono } from 'hono';\nconst app = new Hono();\napp.get('/', (c) => c.text('ok'));\nexport default app;";
  /** What `rateLimit` from `entry` on the memory store adds to a Worker over Hono alone, gzipped. */
  async function overHono(entry: string): Promise<number> {
    const alone = await edgeBytes(app, hono);
    const limited = await edgeBytes(
      app,
      hono.replace(
        'const app = new Hono();\n',
        `import { rateLimit } from '${entry}';\nconst app = new Hono();\napp.use(rateLimit({ limit: 100, period: '1m' }));\n`,
      ),
    );
    console.log(`${entry} over Hono alone: ${((limited - alone) / 1024).toFixed(1)} KiB gzipped`);
    assert.ok(limited > alone, 'the limiter is in the bundle');
    return limited - alone;
  }

  it('sluice/hono on the memory store adds at most 12 KB gzipped over Hono alone', async () => {
    const bytes = await overHono('sluice/hono');
    assert.ok(bytes <= EDGE_GOAL, `${bytes} bytes gzipped over Hono alone`);
    // The edge build is what the Workers conditions pick: every option (sluice/hono/full) is larger.
    assert.ok((await overHono('sluice/hono/full')) > bytes);
  });

  it('ships no test files, and no source map without its source', () => {
    const dir = join(app, 'node_modules', 'sluice');
    const files: string[] = [];
    const walk = (d: string) => {
      for (const name of readdirSync(d)) {
        const path = join(d, name);
        if (statSync(path).isDirectory()) walk(path);
        else files.push(path.slice(dir.length + 1));
      }
    };
    walk(dir);
    assert.ok(files.includes('LICENSE'));
    assert.deepEqual(
      files.filter((f) => f.endsWith('.test.ts') || f.endsWith('.test.js')),
      [],
    );
    for (const map of files.filter((f) => f.endsWith('.js.map'))) {
      const sources = (JSON.parse(readFileSync(join(dir, map), 'utf8')) as { sources: string[] }).sources;
      for (const source of sources) {
        const target = resolve(dir, map, '..', source);
        assert.ok(statSync(target, { throwIfNoEntry: false }), `${map} points at ${source}, which is not shipped`);
      }
    }
  });

  it('every entry point imports from ESM and requires from CommonJS', () => {
    writeFileSync(
      join(app, 'esm.mjs'),
      entries
        .filter((e) => e !== 'sluice/nest')
        .map((e, i) => `import * as m${i} from '${e}';\nif (Object.keys(m${i}).length === 0) throw new Error('${e}');`)
        .join('\n') +
        // sluice/nest needs Nest itself (an optional peer, not installed here): its only failure is that.
        `\ntry { await import('sluice/nest'); throw new Error('sluice/nest loaded without @nestjs/common'); }\ncatch (e) { if (!String(e.message).includes("'@nestjs/common'")) throw e; }`,
    );
    writeFileSync(
      join(app, 'cjs.cjs'),
      `${entries
        .filter((e) => e !== 'sluice/nest')
        .map((e) => `if (Object.keys(require('${e}')).length === 0) throw new Error('${e}');`)
        .join('\n')}
try { require('sluice/nest'); throw new Error('sluice/nest loaded without @nestjs/common'); }
catch (e) { if (!String(e.message).includes("'@nestjs/common'")) throw e; }
const { createLimiter } = require('sluice');
createLimiter({ limit: 1, period: '1s' }).check('k').then((d) => { if (!d.allowed) process.exit(3); });`,
    );
    run(process.execPath, ['esm.mjs'], app);
    const cjs = run(process.execPath, ['cjs.cjs'], app);
    assert.doesNotMatch(cjs, /ExperimentalWarning/);
  });

  const consumer = `import { createLimiter, type Decision } from 'sluice';
import { createRedisStore } from 'sluice/redis';
import { createRulesEngine, parseRules } from 'sluice/rules';
import { createClient } from 'sluice/client';
const limiter = createLimiter({ algorithm: 'token-bucket', limit: 10, period: '1s' });
export const decide = (key: string): Promise<Decision> => limiter.check(key);
export const parts = [createRedisStore, createRulesEngine, parseRules, createClient];
`;
  const resolutions: Record<string, { module: string; moduleResolution: string; type?: string }> = {
    node10: { module: 'commonjs', moduleResolution: 'node10' },
    'node16 (CommonJS)': { module: 'node16', moduleResolution: 'node16' },
    nodenext: { module: 'nodenext', moduleResolution: 'nodenext', type: 'module' },
    bundler: { module: 'esnext', moduleResolution: 'bundler', type: 'module' },
  };
  for (const [name, options] of Object.entries(resolutions)) {
    it(`a TypeScript consumer type-checks under moduleResolution ${name}`, () => {
      const dir = join(app, `ts-${name.replace(/\W/g, '')}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'package.json'), JSON.stringify(options.type ? { type: options.type } : {}));
      writeFileSync(join(dir, 'index.ts'), consumer);
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: options.module,
            moduleResolution: options.moduleResolution,
            target: 'es2022',
            strict: true,
            noEmit: true,
            skipLibCheck: false,
            types: ['node'],
            typeRoots: [join(root, 'node_modules', '@types')],
          },
          files: ['index.ts'],
        }),
      );
      run(process.execPath, [tsc, '-p', dir], dir);
    });
  }
});

describe('the sluice-server tarball in a fresh project', { timeout: 300_000 }, () => {
  let app = '';
  let redis: RedisServerHandle | undefined;
  before(async () => {
    app = project('server-app', {});
    const log = run(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', libraryTarball, serverTarball],
      app,
    );
    assert.doesNotMatch(log, /EBADENGINE/);
    const packages = installedPackages(app);
    console.log(
      `server install: ${packages.length} packages, ${(duBytes(join(app, 'node_modules')) / 1024 / 1024).toFixed(1)} MiB on disk`,
    );
    assert.ok(packages.includes('ioredis'), 'ioredis comes with the server');
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });

  const bin = () => join(app, 'node_modules', '.bin', 'sluice');

  it('sluice --version prints the package version', () => {
    assert.match(run(bin(), ['--version'], app), new RegExp(`sluice ${libraryPkg.version.replace(/\./g, '\\.')}`));
  });

  async function serve(args: readonly string[]): Promise<number> {
    const child: ChildProcess = spawn(
      bin(),
      ['serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', ...args],
      {
        cwd: app,
        env: cleanEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      const http = await new Promise<number>((done, fail) => {
        let out = '';
        let err = '';
        const timer = setTimeout(() => fail(new Error(`no "listening" line in 30 s\n${out}\n${err}`)), 30_000);
        child.stderr?.on('data', (c: Buffer) => {
          err += c.toString();
        });
        child.stdout?.on('data', (c: Buffer) => {
          out += c.toString();
          for (const line of out.split('\n')) {
            if (!line.includes('"listening"')) continue;
            clearTimeout(timer);
            done((JSON.parse(line) as { http: number }).http);
            return;
          }
        });
        child.once('exit', (code) => {
          clearTimeout(timer);
          fail(new Error(`sluice serve exited ${code}\n${out}\n${err}`));
        });
      });
      const res = await fetch(`http://127.0.0.1:${http}/healthcheck`);
      return res.status;
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((done) => child.once('exit', done));
    }
  }

  it('sluice serve answers /healthcheck on the memory store', async () => {
    assert.equal(await serve([]), 200);
  });

  it('sluice serve --redis answers /healthcheck on a real Redis', async () => {
    assert.equal(await serve(['--redis', redis?.url ?? '']), 200);
  });
});
