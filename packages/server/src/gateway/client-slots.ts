/**
 * Counts the requests each client has in flight through the gateway, so that one client cannot occupy the
 * upstream connection pool (or the gateway's sockets) with slow requests while others wait.
 */
export interface ClientSlots {
  /** Takes a slot for `client`: the function that gives it back (call once), or undefined when it has none left. */
  acquire(client: string): (() => void) | undefined;
  /** Requests in flight, all clients. */
  readonly inFlight: number;
}

/** Slots of at most `perClient` concurrent requests per client key. The map holds busy clients only. */
export function createClientSlots(perClient: number): ClientSlots {
  const busy = new Map<string, number>();
  let inFlight = 0;
  return {
    acquire(client) {
      const used = busy.get(client) ?? 0;
      if (used >= perClient) return undefined;
      busy.set(client, used + 1);
      inFlight++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        inFlight--;
        const left = (busy.get(client) ?? 1) - 1;
        if (left <= 0) busy.delete(client);
        else busy.set(client, left);
      };
    },
    get inFlight() {
      return inFlight;
    },
  };
}
