/**
 * Counts the requests each client has in flight through the gateway, so that one client cannot occupy the
 * upstream connection pool (or the gateway's sockets) with slow requests while others wait.
 */
export interface ClientSlots {
  /** Takes a slot for `client`; false when it has none left. Every true is matched by one {@link release}. */
  acquire(client: string): boolean;
  /** Gives back a slot taken by {@link acquire} (the caller makes sure it is given back once). */
  release(client: string): void;
  /** Requests in flight, all clients. */
  readonly inFlight: number;
}

/**
 * Slots of at most `perClient` concurrent requests per client key. The map holds busy clients only.
 * No closure per request: the caller keeps the key and whether it has given its slot back.
 */
export function createClientSlots(perClient: number): ClientSlots {
  const busy = new Map<string, number>();
  let inFlight = 0;
  return {
    acquire(client) {
      const used = busy.get(client) ?? 0;
      if (used >= perClient) return false;
      busy.set(client, used + 1);
      inFlight++;
      return true;
    },
    release(client) {
      inFlight--;
      const left = (busy.get(client) ?? 1) - 1;
      if (left <= 0) busy.delete(client);
      else busy.set(client, left);
    },
    get inFlight() {
      return inFlight;
    },
  };
}
