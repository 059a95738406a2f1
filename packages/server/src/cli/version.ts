/** The installed sluice-server's version, for `sluice --version`. */
import { readFileSync } from 'node:fs';

/** The version of the installed sluice-server package (read from its package.json, beside src/ and dist/). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
