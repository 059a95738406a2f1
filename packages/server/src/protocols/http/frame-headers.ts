/** Headers that forbid framing the dashboard on another site (clickjacking). */
import type { ServerResponse } from 'node:http';

const FRAME_ANCESTORS = "frame-ancestors 'none'";

/**
 * Forbids framing a dashboard page on another site (clickjacking: a hidden frame over a decoy page
 * that gets the admin's clicks). `frame-ancestors` is ignored in a `<meta>` policy, so it goes in the
 * header, merged into any policy the response already has; `X-Frame-Options` is for older browsers.
 * Call before `writeHead`.
 */
export function setNoFraming(res: ServerResponse): void {
  const existing = res.getHeader('content-security-policy');
  const policy = existing === undefined ? '' : String(existing).trim().replace(/;$/, '');
  if (!/(^|;)\s*frame-ancestors\s/i.test(policy)) {
    res.setHeader('content-security-policy', policy === '' ? FRAME_ANCESTORS : `${policy}; ${FRAME_ANCESTORS}`);
  }
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('x-content-type-options', 'nosniff');
}
