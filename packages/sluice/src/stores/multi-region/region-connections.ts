/**
 * The multi-region store's connections: this region's runner for decisions, the sync loop's own connection to it,
 * a runner per peer region with its replies bounded, and how a failed sync is reported.
 */
import { SluiceError } from '../../core/errors.js';
import type { RedisClientLike } from '../redis/client.js';
import { Runner } from '../redis/runner.js';
import { lazyDuplicate } from './lazy-duplicate.js';
import type { Duplicable, MultiRegionStoreOptions, ResolvedMultiRegionOptions } from './options.js';
import { limitReplyBytes, type ReplyWatcher } from './reply-bound.js';
import { type PeerLink, syncCauseOf } from './sync-loop.js';

/** The connections a multi-region store holds, closed together. */
export interface RegionConnections {
  /** This region's Redis, for decisions. */
  readonly local: Runner;
  /** This region's Redis for the sync loop's reads and credits (`local` when there is no second connection). */
  readonly syncLocal: Runner;
  readonly peers: readonly PeerLink[];
  /** A sync push that failed, reported through onError with its code (undefined: no onError). */
  readonly reportSync: ((error: unknown, region: string) => void) | undefined;
  close(): Promise<void>;
}

/** Opens (lazily: nothing is sent yet) every connection the store decides and syncs on. */
export function openRegionConnections(
  o: ResolvedMultiRegionOptions,
  regions: MultiRegionStoreOptions['regions'],
): RegionConnections {
  const onError = o.onError;
  // No scripts to preload (they load on first use); commands wait up to 5 s for a first connection.
  const local = new Runner(o.local, o.timeoutMs, onError, [], 5000);
  // The sync loop's reads and credits in this region go on a connection of their own (when there is
  // one): a sync batch is thousands of keys, and on the decisions' connection every decision sent
  // after it would wait for it (head-of-line). Its timeout is a peer's: nothing waits on it.
  const own =
    o.localSync === 'duplicate'
      ? lazyDuplicate(regions[o.region] as RedisClientLike & Duplicable, o.local.cluster)
      : undefined;
  const syncTransport = own?.transport ?? (o.localSync === 'duplicate' ? undefined : o.localSync);
  const syncLocal = syncTransport === undefined ? local : new Runner(syncTransport, o.peerTimeoutMs, onError, [], 5000);
  // Every reply a peer sends is bounded as it arrives (reply-bound.ts), unless the peer's client is
  // also this region's (one client counting decisions' replies too would trip the bound).
  const watchers: ReplyWatcher[] = [];
  const peers = o.peers.map((p) => {
    const client = regions[p.region] as RedisClientLike;
    const watcher =
      client === regions[o.region]
        ? undefined
        : limitReplyBytes(client, { maxBytes: o.maxPeerReplyBytes, region: p.region });
    if (watcher !== undefined) watchers.push(watcher);
    const transport = watcher === undefined ? p.transport : watcher.wrap(p.transport);
    return {
      region: p.region,
      runner: new Runner(transport, o.peerTimeoutMs, undefined, [], 5000),
      cluster: p.transport.cluster,
    };
  });
  return {
    local,
    syncLocal,
    peers,
    reportSync: onError === undefined ? undefined : (error, region) => onError(syncFailure(error, region)),
    async close() {
      const runners = [local, ...peers.map((p) => p.runner)];
      if (syncLocal !== local) runners.push(syncLocal);
      await Promise.all(runners.map((r) => r.close()));
      for (const w of watchers) w.close();
      own?.close();
    },
  };
}

/**
 * A failure of the sync's own (a reply too large, or not a MERGE answer) keeps its code, wherever the Redis
 * runner wrapped it; a peer's Redis refusing is ERR_SLUICE_MULTI_REGION_SYNC.
 */
function syncFailure(error: unknown, region: string): SluiceError {
  const cause = error instanceof Error ? error.message : String(error);
  return (
    syncCauseOf(error) ??
    new SluiceError('ERR_SLUICE_MULTI_REGION_SYNC', `sync to region ${region} failed: ${cause}`, { cause: error })
  );
}
