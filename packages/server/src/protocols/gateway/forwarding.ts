/**
 * What the gateway forwards: hop-by-hop headers dropped, X-Forwarded-* and Forwarded set or extended for trusted proxies.
 */
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { createClientIpResolver } from 'sluice/http';

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) are the proxy's own business and never forwarded; `HTTP2-Settings`
 * only goes with an `h2c` upgrade (RFC 7540 §3.2.1), which the gateway never passes on.
 */
const HOP_BY_HOP = new Set([
  'connection',
  'http2-settings',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Headers about the client that only a proxy may write. From an untrusted peer they are the client's own
 * claims and are dropped; the gateway writes them anew.
 */
const FORWARDING = new Set(['forwarded', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-real-ip']);

/** The bit of a header name's length in a {@link lengthMask}: one bit per length below 31, one for the rest. */
function lengthBit(length: number): number {
  return length < 31 ? 1 << length : 1 << 31;
}

/** The lengths of `names` as a bit mask: a name of no length in it is none of them (no lower-casing needed). */
function lengthMask(names: Iterable<string>): number {
  let mask = 0;
  for (const name of names) mask |= lengthBit(name.length);
  return mask;
}

const HOP_BY_HOP_LENGTHS = lengthMask(HOP_BY_HOP);

/**
 * The end-to-end header lines of a response, straight from its raw header list (names as the upstream
 * spelt them, repeated fields kept as they came), with `extra` (lower-case names) appended in place of any
 * the upstream sent: the flat list `writeHead` takes.
 * Reading `rawHeaders` rather than `headers` spares Node building the lower-cased header object of every
 * upstream response, and the copy of it. A name is lower-cased (a new string, then looked up) only when
 * its length is that of a hop-by-hop header or of one in `extra`: most response headers are neither.
 */
export function forwardableRaw(raw: readonly string[], extra: Record<string, string>): string[] {
  let lengths = HOP_BY_HOP_LENGTHS;
  for (const name in extra) lengths |= lengthBit(name.length);
  const out: string[] = [];
  let listed: Set<string> | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if ((lengths & lengthBit(name.length)) !== 0) {
      const lower = name.toLowerCase();
      if (HOP_BY_HOP.has(lower)) {
        if (lower === 'connection') listed = connectionTokens(raw[i + 1] as string, listed);
        continue;
      }
      // The gateway's own rate-limit headers replace any the upstream sent.
      if (Object.hasOwn(extra, lower)) continue;
    }
    out.push(name, raw[i + 1] as string);
  }
  // Headers a Connection header names are hop-by-hop too (rare: a second pass only then).
  const kept = listed === undefined ? out : withoutListed(out, listed);
  for (const name in extra) kept.push(name, extra[name] as string);
  return kept;
}

/**
 * The header names a `Connection` value names (besides keep-alive/close), lower-cased, added to `listed`.
 * A set: a hostile peer's value may name thousands, and every header is then looked up in it.
 */
function connectionTokens(value: string, listed: Set<string> | undefined): Set<string> | undefined {
  const lower = value.toLowerCase();
  if (lower === 'keep-alive' || lower === 'close') return listed;
  const out = listed ?? new Set<string>();
  for (const token of lower.split(',')) {
    const t = token.trim();
    if (t !== '') out.add(t);
  }
  return out;
}

/** A flat header list without the fields `listed` (lower-case names) names. */
function withoutListed(list: readonly string[], listed: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < list.length; i += 2) {
    const name = list[i] as string;
    if (!listed.has(name.toLowerCase())) out.push(name, list[i + 1] as string);
  }
  return out;
}

/**
 * Request headers never copied upstream as the client sent them: the hop-by-hop ones, the forwarding ones
 * (rebuilt) and `Host` (the upstream's own).
 */
const NOT_COPIED = new Set([...HOP_BY_HOP, ...FORWARDING, 'host']);

/** Methods for which Node's client frames a request without a body length as having no body at all. */
const BODYLESS_BY_DEFAULT = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);

/** The header names a request's `Connection` header lists (besides keep-alive/close), lower-cased; undefined for none. */
function connectionListed(connection: string | undefined): Set<string> | undefined {
  // Most requests name no header in Connection beyond keep-alive/close: skip the split then.
  if (connection === undefined || connection === 'keep-alive' || connection === 'close') return undefined;
  return connectionTokens(connection, undefined);
}

/** True when `peer` is one of the proxies whose forwarding headers are believed. */
export type TrustCheck = (peer: string) => boolean;

/** The trust check of a `trustProxy` list (CIDRs, addresses, `loopback`, `linklocal`, `uniquelocal`). */
export function createTrustCheck(trustProxy: string | readonly string[] | undefined): TrustCheck {
  if (trustProxy === undefined) return () => false;
  // The resolver reads the list as the client address does (and throws ERR_SLUICE_INVALID_OPTION
  // naming a bad entry), so the two never disagree about which peers are proxies.
  const resolver = createClientIpResolver({ trustProxy });
  return (peer) => resolver.isTrustedPeer(peer);
}

function first(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value.join(', ') : value;
  return text === undefined || text === '' ? undefined : text;
}

/**
 * The request headers sent upstream, as the flat `[name, value, ...]` list Node's `http.request` takes:
 * the end-to-end ones, with the forwarding headers rebuilt from what the gateway can vouch for. A trusted
 * proxy's `X-Forwarded-For`, `-Proto`, `-Host` and `Forwarded` are extended with this hop (so
 * `X-Forwarded-Proto: https` from a TLS-terminating proxy survives); from any other peer they are
 * replaced, as is `X-Real-IP`, which always names the client the gateway resolved.
 *
 * A list rather than an object: Node writes a list as it is, where an object costs a `setHeader` per
 * field (validation, a lower-cased copy of the name and an entry per field) before the same write. Node
 * builds the request's head at once from a list, so what it would decide at the end of an empty body for
 * an object is decided here: a request that may carry a body but has no length (`POST` with neither
 * `Content-Length` nor `Transfer-Encoding`) has none, and goes with `Content-Length: 0`, not chunked.
 */
export function upstreamHeaderList(
  req: IncomingMessage,
  clientIp: string,
  trusted: boolean,
  upstreamHost: string,
): string[] {
  const headers = req.headers;
  const out: string[] = ['host', upstreamHost];
  const listed = connectionListed(headers.connection);
  for (const name in headers) {
    if (NOT_COPIED.has(name) || listed?.has(name)) continue;
    const value = headers[name];
    if (typeof value === 'string') out.push(name, value);
    else if (value !== undefined) for (const one of value) out.push(name, one);
  }
  if (
    headers['content-length'] === undefined &&
    headers['transfer-encoding'] === undefined &&
    !BODYLESS_BY_DEFAULT.has(req.method ?? 'GET')
  ) {
    out.push('content-length', '0');
  }
  const peer = req.socket.remoteAddress ?? clientIp;
  const host = first(headers.host) ?? '';
  const priorFor = trusted ? first(headers['x-forwarded-for']) : undefined;
  const priorProto = trusted ? first(headers['x-forwarded-proto'])?.split(',')[0]?.trim().toLowerCase() : undefined;
  const proto = priorProto === 'https' || priorProto === 'http' ? priorProto : 'http';
  const priorHost = trusted ? first(headers['x-forwarded-host']) : undefined;
  const priorForwarded = trusted ? first(headers.forwarded) : undefined;
  const element = forwardedElement(peer, host, proto);
  out.push(
    'x-forwarded-for',
    priorFor === undefined ? peer : `${priorFor}, ${peer}`,
    'x-forwarded-proto',
    proto,
    'x-forwarded-host',
    priorHost ?? host,
    'x-real-ip',
    clientIp,
    'forwarded',
    priorForwarded === undefined ? element : `${priorForwarded}, ${element}`,
  );
  return out;
}

/** {@link upstreamHeaderList} as an object (a repeated field as a list), for the upgrade path. */
export function upstreamHeaders(
  req: IncomingMessage,
  clientIp: string,
  trusted: boolean,
  upstreamHost: string,
): OutgoingHttpHeaders {
  const list = upstreamHeaderList(req, clientIp, trusted, upstreamHost);
  const headers: OutgoingHttpHeaders = {};
  for (let i = 0; i + 1 < list.length; i += 2) {
    const name = list[i] as string;
    const value = list[i + 1] as string;
    const existing = headers[name];
    headers[name] =
      existing === undefined ? value : [...(Array.isArray(existing) ? existing : [String(existing)]), value];
  }
  return headers;
}

// The last `Forwarded` element made: a client's requests on one connection (and most clients of one
// site) repeat the same peer, host and proto, and the element's quoting tests a regex.
let lastPeer = '';
let lastHost = '';
let lastProto = '';
let lastElement = '';

/** This hop's `Forwarded` element (RFC 7239): `for=<peer>;host=<host>;proto=<proto>`. */
function forwardedElement(peer: string, host: string, proto: string): string {
  if (peer !== lastPeer || host !== lastHost || proto !== lastProto) {
    lastElement = `for=${forwardedNode(peer)};host=${quoted(host)};proto=${proto}`;
    lastPeer = peer;
    lastHost = host;
    lastProto = proto;
  }
  return lastElement;
}

/** An address as a `Forwarded` node (RFC 7239 §6): IPv6 in brackets and quotes. */
function forwardedNode(address: string): string {
  return address.includes(':') ? `"[${address}]"` : address;
}

function quoted(value: string): string {
  return /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(value) ? value : `"${value.replace(/["\\]/g, '\\$&')}"`;
}
