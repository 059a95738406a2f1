/**
 * Who the client is: its address from the TCP peer, or from a forwarding header only when the peer is a trusted proxy,
 * and the key that address counts under (an IPv6 client by its subnet, so it cannot rotate addresses).
 */

import { optionError } from '../core/errors.js';
import { type Cidr, cidrContains, formatIp, type IpBytes, parseCidr, parseIp } from '../core/ip.js';
import { parseForwarded, parseXForwardedFor } from './forwarded.js';
import { createIpKey } from './ip-key.js';

/** Named groups of proxy addresses, as accepted in `trustProxy`. */
export const PROXY_GROUPS: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** Which header a trusted proxy writes the client's address into. */
export type ProxyHeader = 'x-forwarded-for' | 'forwarded';

/** How to find the client's address. */
export interface ClientIpOptions {
  /**
   * Peers whose forwarding header is believed: CIDR blocks or addresses (IPv4, IPv6, IPv4-mapped
   * IPv6) and the groups `'loopback'`, `'linklocal'`, `'uniquelocal'`. From any other peer the header
   * is ignored, so a client cannot choose its own key by sending one. Given, it replaces the
   * framework's own setting; `false` (or `[]`) trusts no proxy whatever the framework says.
   * @default the framework's own setting (Express `trust proxy`, Koa `app.proxy`, Fastify
   *   `trustProxy`), else none: the key is the TCP peer
   */
  trustProxy?: string | readonly string[] | false;
  /**
   * The header the trusted proxies write. Only one is read: a proxy that writes one header passes the
   * other through from the client untouched, so believing both would let the client spoof.
   * @default 'x-forwarded-for'
   */
  proxyHeader?: ProxyHeader;
  /**
   * IPv6 clients are keyed by their `/ipv6Subnet` network, since one subscriber usually holds a whole
   * /56 (or /48, /64) and could otherwise rotate through addresses. `false` keys by the full address.
   * @default 56
   */
  ipv6Subnet?: number | false;
}

/** Finds a request's client address and rate-limit key. */
export interface ClientIpResolver {
  /**
   * The client's address: the TCP peer, or — when the peer is a trusted proxy — the right-most hop of
   * the forwarding header that is not itself a trusted proxy. `''` when the peer is unknown.
   */
  clientIp<R>(peer: string | undefined, req: R, header: (req: R, name: string) => string | undefined): string;
  /** The key an address counts under: IPv4 as is, IPv6 masked to its subnet (`2001:db8:0:100::/56`). */
  ipKey(ip: string): string;
  /** True when any proxy is trusted. */
  readonly trusting: boolean;
  /** True when `peer` is one of the trusted proxies (its forwarding header is believed). */
  isTrustedPeer(peer: string): boolean;
}

const CACHE_LIMIT = 10_000;

/** Resolves `trustProxy` and friends once; throws `ERR_SLUICE_INVALID_OPTION` naming a bad entry. */
export function createClientIpResolver(options: ClientIpOptions = {}): ClientIpResolver {
  const trusted = parseTrustProxy(options.trustProxy);
  const proxyHeader = options.proxyHeader ?? 'x-forwarded-for';
  if (proxyHeader !== 'x-forwarded-for' && proxyHeader !== 'forwarded')
    throw optionError('proxyHeader', `'${String(proxyHeader)}' is not 'x-forwarded-for' or 'forwarded'`);
  const ipKey = createIpKey(options.ipv6Subnet);
  const parseHops = proxyHeader === 'forwarded' ? parseForwarded : parseXForwardedFor;
  // Peers are few (the proxies themselves) and IPv6 clients repeat: remember answers, boundedly.
  const trustCache = new Map<string, boolean>();

  const isTrusted = (bytes: IpBytes) => trusted.some((cidr) => cidrContains(cidr, bytes));

  function peerTrusted(peer: string): boolean {
    let answer = trustCache.get(peer);
    if (answer === undefined) {
      const bytes = parseIp(peer);
      answer = bytes !== undefined && isTrusted(bytes);
      if (trustCache.size >= CACHE_LIMIT) trustCache.clear();
      trustCache.set(peer, answer);
    }
    return answer;
  }

  return {
    trusting: trusted.length > 0,
    isTrustedPeer: (peer) => trusted.length > 0 && peerTrusted(peer),

    clientIp(peer, req, header) {
      if (peer === undefined || peer === '') return '';
      if (trusted.length === 0 || !peerTrusted(peer)) return normalize(peer);
      const value = header(req, proxyHeader);
      if (value === undefined || value === '') return normalize(peer);
      const hops = parseHops(value);
      // Walk from the nearest hop outwards: each trusted proxy vouches for the hop to its left; the
      // first hop that is not a trusted proxy is the client. A hop that is not an address (`unknown`,
      // an obfuscated name) ends the walk at the proxy that reported it.
      let client = normalize(peer);
      for (let i = hops.length - 1; i >= 0; i--) {
        const bytes = parseIp(hops[i] as string);
        if (bytes === undefined) return client;
        client = formatIp(bytes);
        if (!isTrusted(bytes)) return client;
      }
      return client;
    },

    ipKey,
  };
}

/** The peer address as written canonically (an IPv4-mapped IPv6 peer becomes dotted IPv4). */
export function normalize(peer: string): string {
  if (!peer.includes(':')) return peer;
  if (peer.startsWith('::ffff:') && peer.includes('.')) return peer.slice(7);
  const bytes = parseIp(peer);
  return bytes === undefined ? peer : formatIp(bytes);
}

function parseTrustProxy(value: ClientIpOptions['trustProxy']): Cidr[] {
  if (value === undefined || value === false) return [];
  const entries = typeof value === 'string' ? value.split(',').map((s) => s.trim()) : value;
  if (!Array.isArray(entries)) throw optionError('trustProxy', 'expected a CIDR string or an array of them');
  const cidrs: Cidr[] = [];
  for (const [i, entry] of entries.entries()) {
    const group = typeof entry === 'string' ? PROXY_GROUPS[entry] : undefined;
    for (const text of group ?? [entry]) {
      const cidr = typeof text === 'string' ? parseCidr(text.trim()) : undefined;
      if (cidr === undefined) {
        throw optionError(
          `trustProxy[${i}]`,
          `'${String(entry)}' is not an IP address, a CIDR block or one of ${Object.keys(PROXY_GROUPS).join(', ')}`,
        );
      }
      cidrs.push(cidr);
    }
  }
  return cidrs;
}
