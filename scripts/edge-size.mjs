/**
 * What `sluice/hono` on the memory store adds to an edge bundle (esbuild, minified, ESM, the Workers
 * conditions), from the sources: gzipped bytes over Hono alone, then minified bytes per folder and
 * per file. `node scripts/edge-size.mjs [--files N] [--full]` (`--full`: sluice/hono/full, every option,
 * instead of the edge build the Workers conditions pick). The packaging test measures the packed tarball
 * the same way; this is the tool for finding where the bytes are.
 */
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const files = Number(process.argv[process.argv.indexOf('--files') + 1]) || 30;
const entry = process.argv.includes('--full') ? 'hono.ts' : 'hono/edge.ts';
const hono = `import { Hono } from 'hono';\nconst app = new Hono();\napp.get('/', (c) => c.text('ok'));\nexport default app;`;
const limited = hono.replace(
  'const app = new Hono();\n',
  `import { rateLimit } from './packages/sluice/src/adapters/${entry}';\nconst app = new Hono();\napp.use(rateLimit({ limit: 100, period: '1m' }));\n`,
);

async function bundle(contents) {
  const result = await build({
    stdin: { contents, resolveDir: root, loader: 'ts' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    conditions: ['workerd', 'worker', 'browser'],
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const code = result.outputFiles[0].contents;
  return { gzip: gzipSync(code).length, inputs: Object.values(result.metafile.outputs)[0].inputs };
}

const alone = await bundle(hono);
const withLimit = await bundle(limited);
console.log(
  `sluice/hono${entry === 'hono.ts' ? '/full' : ''} over Hono alone: ${((withLimit.gzip - alone.gzip) / 1024).toFixed(2)} KiB gzipped`,
);
const rows = Object.entries(withLimit.inputs)
  .filter(([path]) => path.includes('packages/sluice/src/'))
  .map(([path, input]) => [input.bytesInOutput, path.replace(/.*packages\/sluice\/src\//, '')])
  .sort((a, b) => b[0] - a[0]);
const byFolder = new Map();
for (const [bytes, path] of rows) {
  const folder = path.split('/').slice(0, -1).join('/') || '.';
  byFolder.set(folder, (byFolder.get(folder) ?? 0) + bytes);
}
console.log('\nminified bytes by folder:');
for (const [folder, bytes] of [...byFolder].sort((a, b) => b[1] - a[1]))
  console.log(`${String(bytes).padStart(7)}  ${folder}`);
console.log(`\nlargest ${files} files (minified bytes):`);
for (const [bytes, path] of rows.slice(0, files)) console.log(`${String(bytes).padStart(7)}  ${path}`);
