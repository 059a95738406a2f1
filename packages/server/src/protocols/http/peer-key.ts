/** The address a client is counted under for bounds and backoffs: IPv4 as it is, IPv6 by its /56. */
import { formatIp, maskIp, parseIp } from 'sluice/http';

/**
 * The address a client's failures are counted under: an IPv4 address as it is, an IPv6 address by its
 * /56 network (one subscriber holds a whole /56 and could otherwise step through its addresses).
 */
export function peerKey(peer: string | undefined): string {
  if (peer === undefined || !peer.includes(':')) return peer ?? '';
  if (peer.startsWith('::ffff:') && peer.includes('.')) return peer.slice(7);
  const bytes = parseIp(peer);
  return bytes === undefined ? peer : `${formatIp(maskIp(bytes, 56))}/56`;
}
