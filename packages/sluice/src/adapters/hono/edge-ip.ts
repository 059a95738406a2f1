/**
 * The key a client address counts under in the edge build, as the full middleware makes it (http/client-ip.ts):
 * IPv4 as is, IPv6 by its `/ipv6Subnet` network (default /56), so a client cannot rotate through its addresses.
 */
import { optionError } from '../../core/errors.js';
import { formatIp, isV4, maskIp, parseIp } from '../../core/ip.js';

/** The `ipKey` of `ipv6Subnet`; throws `ERR_SLUICE_INVALID_OPTION` for a prefix length that is not 1–128 or false. */
export function createIpKey(ipv6Subnet: number | false | undefined): (ip: string) => string {
  const subnet = ipv6Subnet ?? 56;
  if (subnet !== false && (!Number.isInteger(subnet) || subnet < 1 || subnet > 128))
    throw optionError('ipv6Subnet', `${String(subnet)} is not a prefix length from 1 to 128 (or false)`);
  const bits = subnet === false ? 128 : subnet;
  return (ip) => {
    if (!ip.includes(':')) return ip;
    const bytes = parseIp(ip);
    if (bytes === undefined) return ip;
    return isV4(bytes) || bits === 128 ? formatIp(bytes) : `${formatIp(maskIp(bytes, bits))}/${bits}`;
  };
}
