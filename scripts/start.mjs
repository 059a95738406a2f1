// `npm start`: runs the service (`sluice serve`) on the embedded memory store, building dist/ first when
// it is missing or older than the sources, so `npm install && npm start` works on a fresh clone.
// Arguments after `npm start --` go to `sluice serve`; PORT, GRPC_PORT, SLUICE_CONFIG, ... apply too.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const entry = join(root, 'dist', 'cli', 'main.js');

function newest(dir) {
  let latest = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path);
    latest = Math.max(latest, stat.isDirectory() ? newest(path) : stat.mtimeMs);
  }
  return latest;
}

if (!existsSync(entry) || statSync(entry).mtimeMs < newest(join(root, 'src'))) {
  console.error('sluice: building dist/ (tsc -p tsconfig.build.json) ...');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const build = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
    stdio: 'inherit',
    cwd: root,
  });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

const child = spawn(process.execPath, [entry, 'serve', ...process.argv.slice(2)], { stdio: 'inherit' });
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
