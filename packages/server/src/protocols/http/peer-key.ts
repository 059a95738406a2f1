/** The address a client is counted under for bounds and backoffs: IPv4 as it is, IPv6 by its /56. */
import { createClientIpResolver } from 'sluice/http';

// No proxy trusted: only the resolver's key of an address (an IPv6 address masked to its /56) is used.
const keys = createClientIpResolver({ ipv6Subnet: 56 });

/**
 * The address a client's failures are counted under: an IPv4 address as it is, an IPv6 address by its
 * /56 network (one subscriber holds a whole /56 and could otherwise step through its addresses).
 */
export function peerKey(peer: string | undefined): string {
  return peer === undefined ? '' : keys.ipKey(peer);
}
