// `npm start`: runs the service (`sluice serve`) on the embedded memory store, building both packages
// first when a build is missing or older than the sources, so `npm install && npm start` works on a
// fresh clone. Arguments after `npm start --` go to `sluice serve`; PORT, GRPC_PORT, SLUICE_CONFIG, ...
// apply too.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const library = join(root, 'packages', 'sluice');
const server = join(root, 'packages', 'server');
const entry = join(server, 'dist', 'cli', 'main.js');

function newest(dir) {
  let latest = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path);
    latest = Math.max(latest, stat.isDirectory() ? newest(path) : stat.mtimeMs);
  }
  return latest;
}

function run(args) {
  const build = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

const libraryBuilt = join(library, 'dist', 'esm', 'index.js');
if (!existsSync(libraryBuilt) || statSync(libraryBuilt).mtimeMs < newest(join(library, 'src'))) {
  console.error('sluice: building packages/sluice ...');
  run([join(root, 'scripts', 'build-library.mjs')]);
}
if (
  !existsSync(entry) ||
  statSync(entry).mtimeMs < Math.max(newest(join(server, 'src')), statSync(libraryBuilt).mtimeMs)
) {
  console.error('sluice: building packages/server ...');
  run([createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', join(server, 'tsconfig.build.json')]);
}

// The built service runs on the built library: drop the test runner's source condition if it is set.
const nodeOptions = (process.env.NODE_OPTIONS ?? '').replace(/--conditions=sluice-source/g, '').trim();
const child = spawn(process.execPath, [entry, 'serve', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, NODE_OPTIONS: nodeOptions },
});
// Pass stop signals on, so `kill <npm start's pid>` shuts the service down gracefully too.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.on(signal, () => {
    if (child.exitCode === null) child.kill(signal);
  });
}
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
// `kill <npm's pid>` stops npm and its shell but not us: when our parent goes away, stop the service too.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent && child.exitCode === null) child.kill('SIGTERM');
}, 500).unref();
