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
 *
 * Elements are split at every comma, quoted or not: no node a `for=` can name (an address, `unknown`
 * or an obfuscated name, with its port) holds one, and a quote a client leaves open then cannot swallow
 * the elements our proxies appended after it (which would key the client as its proxy).
 * @example parseForwarded('for=192.0.2.60;proto=http, for="[2001:db8::17]:4711"') // ['192.0.2.60', '[2001:db8::17]:4711']
 */
export function parseForwarded(value: string): string[] {
  return value.split(',').map(forOf);
}

/** The unquoted `for=` value of one element (`for=a;proto=http`), or `''`. */
function forOf(element: string): string {
  let found = '';
  let name = '';
  let token = '';
  let inName = true;
  let quoted = false;
  const endPair = () => {
    if (name.trim().toLowerCase() === 'for') found = token.trim();
    name = '';
    token = '';
    inName = true;
  };
  for (let i = 0; i < element.length; i++) {
    const c = element[i] as string;
    if (quoted) {
      if (c === '\\' && i + 1 < element.length) token += element[++i];
      else if (c === '"') quoted = false;
      else token += c;
    } else if (c === '"' && !inName) quoted = true;
    else if (c === '=' && inName) inName = false;
    else if (c === ';') endPair();
    else if (inName) name += c;
    else token += c;
  }
  endPair();
  return found;
}
