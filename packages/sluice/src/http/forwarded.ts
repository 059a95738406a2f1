/**
 * The hop lists of `X-Forwarded-For` and `Forwarded` (RFC 7239), left (the first client) to right (the
 * proxy nearest to us).
 */

/** The addresses of `X-Forwarded-For: client, proxy1, proxy2`, trimmed, empty entries dropped. */
export function parseXForwardedFor(value: string): string[] {
  const hops: string[] = [];
  for (const part of value.split(',')) {
    const hop = part.trim();
    if (hop !== '') hops.push(hop);
  }
  return hops;
}

/**
 * The `for=` value of every element of a `Forwarded` header (RFC 7239 §4), unquoted. An element
 * without `for` yields `''`, which no address parser accepts: the hop is unknown, so the chain stops
 * there rather than skipping over it.
 * @example parseForwarded('for=192.0.2.60;proto=http, for="[2001:db8::17]:4711"') // ['192.0.2.60', '[2001:db8::17]:4711']
 */
export function parseForwarded(value: string): string[] {
  const hops: string[] = [];
  let current = '';
  let name = '';
  let token = '';
  let inName = true;
  let quoted = false;
  const endPair = () => {
    if (name.trim().toLowerCase() === 'for') current = token.trim();
    name = '';
    token = '';
    inName = true;
  };
  for (let i = 0; i < value.length; i++) {
    const c = value[i] as string;
    if (quoted) {
      if (c === '\\' && i + 1 < value.length) token += value[++i];
      else if (c === '"') quoted = false;
      else token += c;
    } else if (c === '"' && !inName) {
      quoted = true;
    } else if (c === '=' && inName) {
      inName = false;
    } else if (c === ';') {
      endPair();
    } else if (c === ',') {
      endPair();
      hops.push(current);
      current = '';
    } else if (inName) {
      name += c;
    } else {
      token += c;
    }
  }
  endPair();
  hops.push(current);
  return hops;
}
