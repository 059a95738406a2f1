import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { cidrContains, PROXY_GROUPS, parseCidr, parseIp } from 'sluice/http';

/** Hop-by-hop headers (RFC 9110 §7.6.1) are the proxy's own business and never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
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

/**
 * The end-to-end header lines of a response, straight from its raw header list (names as the upstream
 * spelt them, repeated fields kept as they came), with `extra` (lower-case names) appended in place of any
 * the upstream sent: the flat list `writeHead` takes.
 * Reading `rawHeaders` rather than `headers` spares Node building the lower-cased header object of every
 * upstream response, and the copy of it.
 */
export function forwardableRaw(raw: readonly string[], extra: Record<string, string>): string[] {
  const out: string[] = [];
  let listed: string[] | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 10 && name.toLowerCase() === 'connection') {
      const value = (raw[i + 1] as string).toLowerCase();
      if (value !== 'keep-alive' && value !== 'close') {
        const tokens = value
          .split(',')
          .map((t) => t.trim())
          .filter((t) => t !== '');
        listed = listed === undefined ? tokens : [...listed, ...tokens];
      }
    }
  }
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    const lower = name.toLowerCase();
    // The gateway's own rate-limit headers replace any the upstream sent.
    if (HOP_BY_HOP.has(lower) || listed?.includes(lower) || Object.hasOwn(extra, lower)) continue;
    out.push(name, raw[i + 1] as string);
  }
  for (const name in extra) out.push(name, extra[name] as string);
  return out;
}

/** `headers` without the hop-by-hop ones, those `Connection` lists, and (when given) those in `drop`. */
function copyHeaders(headers: IncomingHttpHeaders, drop: ReadonlySet<string> | undefined): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  const connection = headers.connection;
  // Most requests name no header in Connection beyond keep-alive/close: skip the split then.
  const listed =
    connection === undefined || connection === 'keep-alive' || connection === 'close'
      ? undefined
      : String(connection)
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean);
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || drop?.has(name) || listed?.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/** True when `peer` is one of the proxies whose forwarding headers are believed. */
export type TrustCheck = (peer: string) => boolean;

/** The trust check of a `trustProxy` list (CIDRs, addresses, `loopback`, `linklocal`, `uniquelocal`). */
export function createTrustCheck(trustProxy: string | readonly string[] | undefined): TrustCheck {
  if (trustProxy === undefined) return () => false;
  const entries = typeof trustProxy === 'string' ? trustProxy.split(',') : trustProxy;
  const cidrs = entries
    .flatMap((e) => PROXY_GROUPS[e.trim()] ?? [e.trim()])
    .flatMap((text) => {
      const cidr = parseCidr(text);
      return cidr === undefined ? [] : [cidr];
    });
  if (cidrs.length === 0) return () => false;
  return (peer) => {
    const bytes = parseIp(peer);
    return bytes !== undefined && cidrs.some((c) => cidrContains(c, bytes));
  };
}

function first(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value.join(', ') : value;
  return text === undefined || text === '' ? undefined : text;
}

/**
 * The request headers sent upstream: the end-to-end ones, with the forwarding headers rebuilt from what
 * the gateway can vouch for. A trusted proxy's `X-Forwarded-For`, `-Proto`, `-Host` and `Forwarded` are
 * extended with this hop (so `X-Forwarded-Proto: https` from a TLS-terminating proxy survives); from any
 * other peer they are replaced, as is `X-Real-IP`, which always names the client the gateway resolved.
 */
export function upstreamHeaders(
  req: IncomingMessage,
  clientIp: string,
  trusted: boolean,
  upstreamHost: string,
): IncomingHttpHeaders {
  // Left out as the headers are copied, not deleted after: a `delete` turns the object into a slow
  // dictionary for everything that reads it later (Node's header validation and serialisation).
  const headers = copyHeaders(req.headers, FORWARDING);
  const peer = req.socket.remoteAddress ?? clientIp;
  const host = first(req.headers.host) ?? '';
  const priorFor = trusted ? first(req.headers['x-forwarded-for']) : undefined;
  const priorProto = trusted ? first(req.headers['x-forwarded-proto'])?.split(',')[0]?.trim().toLowerCase() : undefined;
  const proto = priorProto === 'https' || priorProto === 'http' ? priorProto : 'http';
  const priorHost = trusted ? first(req.headers['x-forwarded-host']) : undefined;
  const priorForwarded = trusted ? first(req.headers.forwarded) : undefined;
  headers['x-forwarded-for'] = priorFor === undefined ? peer : `${priorFor}, ${peer}`;
  headers['x-forwarded-proto'] = proto;
  headers['x-forwarded-host'] = priorHost ?? host;
  headers['x-real-ip'] = clientIp;
  const element = forwardedElement(peer, host, proto);
  headers.forwarded = priorForwarded === undefined ? element : `${priorForwarded}, ${element}`;
  headers.host = upstreamHost;
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
