/**
 * A request's identity for the middleware: its client address (sluice's `trustProxy`, else the framework's own setting)
 * and its key, with a warning once per process for the two likeliest proxy misconfigurations.
 */
import { type ClientIpOptions, createClientIpResolver, normalize } from './client-ip.js';
import type { RequestAccess } from './request.js';
import { warned, warnOnce } from './warn.js';

/** Who a request comes from: its client address, and the key that address counts under. */
export interface Identity<Req> {
  /** The client address (`''` when unknown). */
  clientIp(req: Req): string;
  /** The key of an address: IPv4 as is, IPv6 masked to its subnet. */
  ipKey(ip: string): string;
}

const UNTRUSTED = 'SLUICE_UNTRUSTED_FORWARDED_HEADER';
const PERMISSIVE = 'SLUICE_PERMISSIVE_TRUST_PROXY';
/** Requests looked at for a forwarding header one by one, before looking at one in 64. */
const FIRST_REQUESTS_CHECKED = 1000;

/**
 * Resolves the client address. sluice's own `trustProxy` wins when given; otherwise the framework's
 * own setting is honoured (Express `trust proxy`, Koa `app.proxy`, Fastify `trustProxy`), so an app
 * already configured for its proxy needs nothing more; otherwise the address is the TCP peer.
 *
 * Two configurations that are probably mistaken are warned about, once per process each, with the fix:
 * a forwarding header from a peer nobody trusts (behind a proxy, every client then shares the proxy's
 * limit — the misconfiguration users of express-rate-limit report most), and a framework setting that
 * trusts every peer (any client then picks its own key by sending `X-Forwarded-For`).
 */
export function createIdentity<Req>(
  options: ClientIpOptions,
  access: RequestAccess<Req>,
  peerOf: (req: Req) => string | undefined,
): Identity<Req> {
  const resolver = createClientIpResolver(options);
  const own = options.trustProxy !== undefined;
  const framework = own ? undefined : access.framework;
  const header = access.header;

  let firstChecks = FIRST_REQUESTS_CHECKED;
  let sinceCheck = 0;
  /**
   * Whether to look for a forwarding header on this request: on each of the first requests, then on
   * one in 64 (two header lookups cost about a tenth of a request's limiting, on every request of a
   * process that is rightly not behind a proxy); behind a proxy nearly every request has one, so the
   * warning still comes within 64 of its requests. Never again once given.
   */
  function lookForForwarding(): boolean {
    if (firstChecks > 0) firstChecks--;
    else {
      sinceCheck = (sinceCheck + 1) & 63;
      if (sinceCheck !== 0) return false;
    }
    return !warned(UNTRUSTED);
  }

  /** Warns when a forwarding header arrives from a peer that is not trusted. */
  function checkUntrusted(req: Req, peer: string): void {
    const xff = header(req, 'x-forwarded-for');
    const fwd = xff === undefined ? header(req, 'forwarded') : undefined;
    if (xff === undefined && fwd === undefined) return;
    if (resolver.isTrustedPeer(peer)) return;
    const name = xff === undefined ? 'Forwarded' : 'X-Forwarded-For';
    const setting = access.framework?.setting;
    warnOnce(
      UNTRUSTED,
      `sluice: a request from ${peer} carries ${name}, but no proxy is trusted, so the client is keyed by the ` +
        `proxy's address: behind a proxy, every client shares one limit. If ${peer} is your proxy, trust it: ` +
        `rateLimit({ trustProxy: ['${peer}'] })${setting === undefined ? '' : ` or the framework's ${setting}`}. ` +
        `If clients reach this server directly, this header is spoofed and ignored; nothing to do.`,
    );
  }

  function clientIp(req: Req): string {
    const peer = peerOf(req);
    if (framework !== undefined) {
      const ip = framework.clientIp(req);
      if (ip !== undefined) {
        if (!warned(PERMISSIVE) && framework.permissive(req)) {
          warnOnce(
            PERMISSIVE,
            `sluice: the framework's ${framework.setting} trusts every peer, so any client can pick its own ` +
              `rate-limit key by sending X-Forwarded-For. Trust only your proxies (e.g. ${framework.example}), ` +
              `or give sluice its own: rateLimit({ trustProxy: ['10.0.0.0/8'] }).`,
          );
        }
        return ip === '' ? (peer === undefined ? '' : normalize(peer)) : normalize(ip);
      }
    }
    if (peer === undefined || peer === '') return '';
    if (lookForForwarding()) checkUntrusted(req, peer);
    return resolver.clientIp(peer, req, header);
  }

  return { clientIp, ipKey: resolver.ipKey };
}
