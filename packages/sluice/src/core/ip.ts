/**
 * IP addresses and CIDR blocks in plain TypeScript (no `node:net`), so the Hono adapter runs on any
 * runtime; shared by the HTTP middleware (client keys, trust proxy, access lists) and the rules'
 * `remote_address` / `masked_remote_address` actions. Every address is held as 16 bytes; an IPv4 address is its IPv4-mapped IPv6 form
 * (`::ffff:a.b.c.d`), so one CIDR test covers both families and `::ffff:10.0.0.1` matches `10.0.0.0/8`.
 */

/** An address as 16 bytes, network order. IPv4 is stored IPv4-mapped (`::ffff:a.b.c.d`). */
export type IpBytes = Uint8Array;

/** A CIDR block over the 128-bit space (an IPv4 `/n` is stored as `/96+n` of its mapped form). */
export interface Cidr {
  readonly bytes: IpBytes;
  readonly bits: number;
}

const V4_MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/** True when the 16 bytes are an IPv4-mapped address. */
export function isV4(bytes: IpBytes): boolean {
  for (let i = 0; i < 12; i++) if (bytes[i] !== V4_MAPPED_PREFIX[i]) return false;
  return true;
}

function parseV4Into(text: string, out: IpBytes, offset: number): boolean {
  let part = 0;
  let digits = 0;
  let index = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 46; // a final '.' closes the last part
    if (c === 46) {
      if (digits === 0 || index > 3) return false;
      out[offset + index++] = part;
      part = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      // Leading zeros are refused: some parsers read them as octal, and two parsers must never disagree.
      if (digits === 1 && part === 0) return false;
      part = part * 10 + (c - 48);
      if (part > 255 || ++digits > 3) return false;
    } else {
      return false;
    }
  }
  return index === 4;
}

function parseHexGroup(text: string): number {
  if (text.length === 0 || text.length > 4) return -1;
  let value = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    let d: number;
    if (c >= 48 && c <= 57) d = c - 48;
    else if (c >= 97 && c <= 102) d = c - 87;
    else if (c >= 65 && c <= 70) d = c - 55;
    else return -1;
    value = value * 16 + d;
  }
  return value;
}

/** Parses `head` or `tail` groups of an IPv6 address into 16-bit words; the last may be dotted IPv4. */
function parseGroups(text: string, allowV4Tail: boolean): number[] | undefined {
  if (text === '') return [];
  const parts = text.split(':');
  const words: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    if (allowV4Tail && i === parts.length - 1 && part.includes('.')) {
      const v4 = new Uint8Array(4);
      if (!parseV4Into(part, v4, 0)) return undefined;
      words.push(((v4[0] as number) << 8) | (v4[1] as number), ((v4[2] as number) << 8) | (v4[3] as number));
    } else {
      const word = parseHexGroup(part);
      if (word < 0) return undefined;
      words.push(word);
    }
  }
  return words;
}

function parseV6(text: string): IpBytes | undefined {
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const gap = text.indexOf('::');
  let words: number[];
  if (gap === -1) {
    const all = parseGroups(text, true);
    if (all === undefined || all.length !== 8) return undefined;
    words = all;
  } else {
    if (text.indexOf('::', gap + 1) !== -1) return undefined;
    const head = parseGroups(text.slice(0, gap), false);
    const tail = parseGroups(text.slice(gap + 2), true);
    if (head === undefined || tail === undefined || head.length + tail.length > 7) return undefined;
    words = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  }
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    const w = words[i] as number;
    bytes[i * 2] = w >> 8;
    bytes[i * 2 + 1] = w & 0xff;
  }
  return bytes;
}

/**
 * Parses an IPv4 or IPv6 address. Also accepts what proxies write around one: `[v6]`, `[v6]:port`,
 * `v4:port` and a `%zone`. Returns undefined for anything else (`unknown`, `_hidden`, garbage).
 * @example parseIp('::ffff:10.0.0.1') // the same bytes as parseIp('10.0.0.1')
 */
export function parseIp(text: string): IpBytes | undefined {
  if (text.length === 0 || text.length > 64) return undefined;
  if (text.charCodeAt(0) === 91 /* [ */) {
    const close = text.indexOf(']');
    if (close === -1) return undefined;
    const rest = text.slice(close + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    return parseV6(text.slice(1, close));
  }
  const colon = text.indexOf(':');
  if (colon === -1 || (text.indexOf(':', colon + 1) === -1 && text.includes('.'))) {
    // IPv4, possibly with a port.
    const host = colon === -1 ? text : text.slice(0, colon);
    if (colon !== -1 && !/^\d{1,5}$/.test(text.slice(colon + 1))) return undefined;
    const bytes = new Uint8Array(16);
    bytes[10] = 0xff;
    bytes[11] = 0xff;
    return parseV4Into(host, bytes, 12) ? bytes : undefined;
  }
  return parseV6(text);
}

/** Writes an address canonically: dotted IPv4 for mapped addresses, RFC 5952 text for IPv6. */
export function formatIp(bytes: IpBytes): string {
  if (isV4(bytes)) return `${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  const words: number[] = [];
  for (let i = 0; i < 8; i++) words.push(((bytes[i * 2] as number) << 8) | (bytes[i * 2 + 1] as number));
  // RFC 5952 §4.2: compress the longest run of two or more zero words, the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (bestStart === -1) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** Keeps the first `bits` bits of an address (over the 128-bit space) and zeroes the rest. */
export function maskIp(bytes: IpBytes, bits: number): IpBytes {
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    out[i] = (bytes[i] as number) & ((0xff << (8 - keep)) & 0xff);
  }
  return out;
}

/**
 * Masks to a prefix length counted in the address's own family — IPv4 bits for an IPv4 address, IPv6
 * bits otherwise — as Envoy's `masked_remote_address` does.
 * @example formatIp(maskToPrefix(parseIp('192.168.37.201')!, 20)) // '192.168.32.0'
 */
export function maskToPrefix(bytes: IpBytes, prefixLength: number): IpBytes {
  return maskIp(bytes, isV4(bytes) ? 96 + prefixLength : prefixLength);
}

/**
 * Parses `addr/bits` (or a bare address, a block of one). IPv4 prefixes count IPv4 bits (`10.0.0.0/8`).
 * Returns undefined when `text` is not a CIDR block.
 */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const bytes = parseIp(slash === -1 ? text : text.slice(0, slash));
  if (bytes === undefined) return undefined;
  const v4 = isV4(bytes) && !text.includes(':');
  let bits = 128;
  if (slash !== -1) {
    const suffix = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(suffix)) return undefined;
    const n = Number(suffix);
    if (n > (v4 ? 32 : 128)) return undefined;
    bits = v4 ? 96 + n : n;
  }
  return { bytes: maskIp(bytes, bits), bits };
}

/** True when `cidr` contains the address. */
export function cidrContains(cidr: Cidr, bytes: IpBytes): boolean {
  const whole = cidr.bits >> 3;
  for (let i = 0; i < whole; i++) if (cidr.bytes[i] !== bytes[i]) return false;
  const rest = cidr.bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole] as number) & mask) === cidr.bytes[whole];
}
