/**
 * Just enough IP address handling for `remote_address` and `masked_remote_address`: parse, normalise
 * IPv4-mapped IPv6 (`::ffff:1.2.3.4`, what a dual-stack Node socket reports) to IPv4, mask to a prefix,
 * and print the way Envoy does (`10.1.0.0/16`, `2001:db8::/56`).
 */
export type ParsedIp = { version: 4; bytes: number[] } | { version: 6; bytes: number[] };

/** Parses an IPv4 or IPv6 address (a zone such as `%eth0` is dropped); undefined when it is not one. */
export function parseIp(text: string): ParsedIp | undefined {
  const address = text.trim();
  if (address.includes(':')) return parseIpv6(address.replace(/%.*$/, '').replace(/^\[|\]$/g, ''));
  const v4 = parseIpv4(address);
  return v4 && { version: 4, bytes: v4 };
}

function parseIpv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : Number.NaN));
  return bytes.every((b) => b >= 0 && b <= 255) ? bytes : undefined;
}

function parseIpv6(text: string): ParsedIp | undefined {
  let head = text;
  let tail4: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    const v4 = parseIpv4(text.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail4 = v4;
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const left = groups(halves[0] as string);
  const right = halves.length === 2 ? groups(halves[1] as string) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...right];
  const bytes: number[] = [];
  for (const g of all) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    const n = Number.parseInt(g, 16);
    bytes.push(n >> 8, n & 0xff);
  }
  if (tail4.length === 4) bytes.splice(12, 4, ...tail4);
  // An IPv4 client on a dual-stack socket: treat it as the IPv4 address it is.
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) {
    return { version: 4, bytes: bytes.slice(12) };
  }
  return { version: 6, bytes };
}

/** Keeps the first `prefixLength` bits. */
export function maskIp(ip: ParsedIp, prefixLength: number): ParsedIp {
  const bytes = ip.bytes.map((b, i) => {
    const bits = Math.min(8, Math.max(0, prefixLength - i * 8));
    return b & ((0xff << (8 - bits)) & 0xff);
  });
  return { version: ip.version, bytes } as ParsedIp;
}

/** The canonical text of an address: dotted IPv4, or RFC 5952 IPv6 (lower case, longest zero run as `::`). */
export function formatIp(ip: ParsedIp): string {
  if (ip.version === 4) return ip.bytes.join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i] as number) << 8) | (ip.bytes[i + 1] as number));
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength && j - i >= 2) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart === -1) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}
