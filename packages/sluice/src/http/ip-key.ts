/**
 * The key a client address counts under: IPv4 as is, IPv6 by its `/ipv6Subnet` network (default /56), since one
 * subscriber usually holds a whole /56 and could otherwise rotate through its addresses.
 */
import { optionError } from '../core/errors.js';
import { formatIp, isV4, maskIp, parseIp } from '../core/ip.js';

/** IPv6 clients repeat: answers are remembered, up to this many. */
const CACHE_LIMIT = 10_000;

/**
 * The key maker of `ipv6Subnet` (`false`: the full address).
 * @throws SluiceError `ERR_SLUICE_INVALID_OPTION` for a prefix length that is not 1–128
 */
export function createIpKey(ipv6Subnet: number | false | undefined): (ip: string) => string {
  const subnet = ipv6Subnet ?? 56;
  if (subnet !== false && (!Number.isInteger(subnet) || subnet < 1 || subnet > 128))
    throw optionError('ipv6Subnet', `${String(subnet)} is not a prefix length from 1 to 128 (or false)`);
  const bits = subnet === false ? 128 : subnet;
  const cache = new Map<string, string>();
  return (ip) => {
    if (!ip.includes(':')) return ip;
    let key = cache.get(ip);
    if (key === undefined) {
      const bytes = parseIp(ip);
      if (bytes === undefined) key = ip;
      else if (isV4(bytes) || bits === 128) key = formatIp(bytes);
      else key = `${formatIp(maskIp(bytes, bits))}/${bits}`;
      if (cache.size >= CACHE_LIMIT) cache.clear();
      cache.set(ip, key);
    }
    return key;
  };
}
