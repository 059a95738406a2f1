/** Serves the dashboard's static files from the package's `dashboard/` directory, and nothing outside it. */
import { createReadStream, existsSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setNoFraming } from './frame-headers.js';

/** The package's `dashboard/` directory (beside `src/` and `dist/`). */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../../dashboard/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.map': 'application/json; charset=utf-8',
};

/**
 * Serves GET/HEAD requests from `root` (`/` is `index.html`); answers false when there is no such file
 * so the caller can send its own 404. Paths that climb out of `root` never resolve. No page may be framed
 * by another site (see frame-headers.ts).
 */
export function createStaticHandler(
  root: string,
): (req: IncomingMessage, res: ServerResponse, pathname: string) => boolean {
  const base = normalize(root.endsWith(sep) ? root : root + sep);
  return (req, res, pathname) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathname);
    } catch {
      return false;
    }
    if (decoded.includes('\0')) return false;
    const file = normalize(join(base, decoded === '/' ? 'index.html' : decoded));
    if (!file.startsWith(base) || !existsSync(file)) return false;
    const stat = statSync(file);
    if (!stat.isFile()) return false;
    setNoFraming(res);
    res.writeHead(200, {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'content-length': stat.size,
      'cache-control': 'no-cache',
    });
    if (req.method === 'HEAD') res.end();
    else createReadStream(file).pipe(res);
    return true;
  };
}
