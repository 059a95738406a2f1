/**
 * The client's address under Hono, read from each runtime's own connection information:
 * - Node (`@hono/node-server`): the Node request in `c.env.incoming`, whose socket knows the peer;
 * - Bun (`Bun.serve({ fetch: app.fetch })` or `export default app`): `c.env` is Bun's server, and
 *   `server.requestIP(request)` the peer;
 * - Deno (`Deno.serve(app.fetch)`): `c.env` is the handler info, `remoteAddr.hostname` the peer;
 * - Cloudflare Workers: `CF-Connecting-IP`, which Cloudflare's edge sets (and overwrites) on every
 *   request; standalone workerd puts the peer in `request.cf.clientIp` instead, which a client cannot send.
 * Without it every client would share one counter — the whole site limited as one client — so the
 * middleware refuses: at creation on a runtime it cannot read, at the first request when the app is
 * served in a way that hides the connection (the message says how to fix either).
 */
import type { Context } from 'hono';
import { SluiceError } from '../../core/errors.js';
import type { RateLimitOptions } from '../../http/index.js';

/** The runtimes whose connection information the Hono adapter reads. */
export type HonoRuntime = 'node' | 'bun' | 'deno' | 'workerd' | 'unknown';

/** Which runtime this is. Bun and Deno also set `process.versions.node`, so they are asked first. */
export function detectRuntime(scope: Record<string, unknown> = globalThis as Record<string, unknown>): HonoRuntime {
  if (scope.Bun !== undefined) return 'bun';
  if (scope.Deno !== undefined) return 'deno';
  const nav = scope.navigator as { userAgent?: string } | undefined;
  if (nav?.userAgent === 'Cloudflare-Workers') return 'workerd';
  const proc = scope.process as { versions?: { node?: string } } | undefined;
  if (typeof proc?.versions?.node === 'string') return 'node';
  return 'unknown';
}

interface Bindings {
  /** @hono/node-server */
  incoming?: { socket?: { remoteAddress?: string } };
  /** Bun's server */
  requestIP?: (request: Request) => { address?: string } | null;
  /** Deno.serve's handler info */
  remoteAddr?: { hostname?: string };
}

/** The peer address of `c` on `runtime`, or undefined when the runtime did not hand it over. */
export function peerOf(c: Context, runtime: HonoRuntime): string | undefined {
  const env = c.env as Bindings | undefined;
  switch (runtime) {
    case 'bun':
      return typeof env?.requestIP === 'function' ? (env.requestIP(c.req.raw)?.address ?? undefined) : undefined;
    case 'deno':
      return env?.remoteAddr?.hostname;
    case 'workerd': {
      const clientIp = (c.req.raw as { cf?: { clientIp?: unknown } }).cf?.clientIp;
      if (typeof clientIp === 'string') return withoutPort(clientIp);
      return c.req.header('cf-connecting-ip');
    }
    default:
      // Node's (and an unknown runtime's best guess): @hono/node-server hands over the Node request.
      return env?.incoming?.socket?.remoteAddress;
  }
}

/** `1.2.3.4:5678` → `1.2.3.4`, `[::1]:5678` → `::1`; a bare IPv6 address stays as it is. */
export function withoutPort(address: string): string {
  if (address.startsWith('[')) {
    const end = address.indexOf(']');
    return end === -1 ? address : address.slice(1, end);
  }
  const colon = address.indexOf(':');
  return colon !== -1 && colon === address.lastIndexOf(':') ? address.slice(0, colon) : address;
}

const HOW: Record<HonoRuntime, string> = {
  node: 'serve the app with @hono/node-server (serve({ fetch: app.fetch })), which hands Hono the Node request',
  bun: 'pass app.fetch itself to Bun.serve (or export default app), so Hono receives the server as c.env',
  deno: 'pass app.fetch itself to Deno.serve, so Hono receives the connection info as c.env',
  workerd: 'requests reach a Worker with CF-Connecting-IP; under workerd it reads request.cf.clientIp',
  unknown: 'this runtime is not one sluice knows (Node, Bun, Deno, Cloudflare Workers)',
};

/** True when some option other than the peer address gives every limit its key. */
function keyedWithoutPeer(options: RateLimitOptions<Context>): boolean {
  if (options.key !== undefined || options.peerAddress !== undefined) return true;
  const limits = options.limits;
  return (
    limits !== undefined && limits.length > 0 && limits.every((l) => typeof l !== 'function' && l.key !== undefined)
  );
}

/**
 * The `peer` reader of the Hono adapter for these options. Throws ERR_SLUICE_NO_PEER_ADDRESS now when
 * the runtime cannot give the address and no option replaces it, and on a request whose address is
 * missing where it should be there.
 */
export function createPeerReader(
  options: RateLimitOptions<Context>,
  runtime: HonoRuntime = detectRuntime(),
): (c: Context) => string | undefined {
  const required = !keyedWithoutPeer(options);
  if (required && runtime === 'unknown') throw noPeer(runtime);
  return (c) => {
    const peer = peerOf(c, runtime);
    if (peer === undefined && required) throw noPeer(runtime);
    return peer;
  };
}

function noPeer(runtime: HonoRuntime): SluiceError {
  return new SluiceError(
    'ERR_SLUICE_NO_PEER_ADDRESS',
    `sluice/hono cannot read the client address (${runtime === 'unknown' ? 'unknown runtime' : runtime}), so every client would share one limit: ${HOW[runtime]}; or give peerAddress: (c) => ... (the address your platform provides) or key: (c) => ...`,
    { option: 'peerAddress' },
  );
}
