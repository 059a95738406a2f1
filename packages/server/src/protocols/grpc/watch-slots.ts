/**
 * The Watch hub's slots: open watches counted in all, per connection and per client address, each under its cap,
 * so one client cannot take the slots other clients' health checking needs.
 */

/** Caps on open watches. */
export interface WatchCaps {
  readonly maxWatches: number;
  readonly perConnection: number;
  readonly perClient: number;
}

/** Counts of open watches by connection and client address. */
export class WatchSlots {
  private readonly byConnection = new Map<unknown, number>();
  private readonly byClient = new Map<string, number>();
  private open = 0;

  constructor(private readonly caps: WatchCaps) {}

  /** Takes a slot for a watch on `connection` from `client`; false (nothing taken) when a cap is reached. */
  take(connection: unknown, client: string | undefined): boolean {
    const onConnection = this.byConnection.get(connection) ?? 0;
    const fromClient = client === undefined ? 0 : (this.byClient.get(client) ?? 0);
    const { maxWatches, perConnection, perClient } = this.caps;
    if (this.open >= maxWatches || onConnection >= perConnection || fromClient >= perClient) return false;
    this.open++;
    this.byConnection.set(connection, onConnection + 1);
    if (client !== undefined) this.byClient.set(client, fromClient + 1);
    return true;
  }

  /** Gives back the slot of a watch that ended. */
  give(connection: unknown, client: string | undefined): void {
    this.open--;
    decrement(this.byConnection, connection);
    if (client !== undefined) decrement(this.byClient, client);
  }
}

function decrement<K>(counts: Map<K, number>, key: K): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left === 0) counts.delete(key);
  else counts.set(key, left);
}
