/**
 * The service in one region of several (`sluice serve --region eu --region-peer us=redis://… …`): a
 * multi-region store over this region's Redis and every peer's, and what the dashboard shows of it —
 * this region's share of the limits it decided on, and the sync lag to each peer.
 */
import { SluiceError } from 'sluice';
import { createMultiRegionStore, limitReplyBytes, type MultiRegionStore } from 'sluice/multi-region';
import type { Logger } from '../observability/logger.js';
import { connectRedis, type StoreBackend } from './redis-backend.js';

/** How the service joins several regions. */
export interface MultiRegionOptions {
  /** This region's name. */
  region: string;
  /** This region's Redis. */
  url: string;
  /** The other regions' Redis, by region name. */
  peers: Readonly<Record<string, string>>;
  /** @default 'escrow' (never over the limit, every algorithm) */
  mode?: 'eventual' | 'escrow';
  /** @default the store's (1000) */
  syncIntervalMs?: number;
  /** @default the store's */
  prefix?: string;
  /** Longest wait for this region's Redis per decision. @default the store's (50) */
  timeoutMs?: number;
  /** Most bytes a peer's Redis may send for one reply (`--region-peer-max-reply`). @default the store's (1 MiB) */
  maxPeerReplyBytes?: number;
}

/** The store's default bound on one reply from a peer (1 MiB; a sync reply is a few KB at most). */
export const DEFAULT_MAX_PEER_REPLY_BYTES = 1_048_576;

/** What the dashboard shows of the regions. */
export interface RegionsView {
  readonly region: string;
  readonly mode: 'eventual' | 'escrow';
  /** Escrow: this region's share of the limits, averaged over its recent decisions (0–1); null before any. */
  readonly share: number | null;
  readonly peers: readonly {
    region: string;
    /** Time since the last sync to it landed (ms), null before the first. */
    syncAgoMs: number | null;
    /** The last measured replication lag (ms). */
    lagMs: number | null;
    pendingKeys: number;
    down: boolean;
    /** Syncs to it that failed, and the code of the last failure (null before any). */
    failures: number;
    lastErrorCode: string | null;
  }[];
}

/** A store backend that also describes the regions. */
export interface MultiRegionBackend extends StoreBackend {
  readonly store: MultiRegionStore;
  regions(): RegionsView;
}

/** Connects to every region's Redis and builds the multi-region store on them. */
export async function createMultiRegionBackend(
  options: MultiRegionOptions,
  logger: Logger,
): Promise<MultiRegionBackend> {
  if (Object.hasOwn(options.peers, options.region)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `--region-peer: ${options.region} is this region`, {
      option: 'multiRegion.peers',
    });
  }
  const names = [options.region, ...Object.keys(options.peers)];
  const maxBytes = options.maxPeerReplyBytes ?? DEFAULT_MAX_PEER_REPLY_BYTES;
  const links = await Promise.all(
    names.map((name) =>
      name === options.region
        ? connectRedis(options.url, logger.child({ region: name }))
        : // A peer's replies are bounded from its first connection on: the ready check's reply too.
          connectRedis(options.peers[name] as string, logger.child({ region: name }), (client) =>
            limitReplyBytes(client as never, { maxBytes, region: name }),
          ),
    ),
  );
  // Recent escrow shares (fractions of the limit), a small ring so the average follows the traffic.
  const shares: number[] = [];
  let next = 0;
  const store = createMultiRegionStore({
    region: options.region,
    regions: Object.fromEntries(names.map((n, i) => [n, links[i]?.client as never])),
    mode: options.mode ?? 'escrow',
    ...(options.syncIntervalMs === undefined ? {} : { syncIntervalMs: options.syncIntervalMs }),
    ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    maxPeerReplyBytes: maxBytes,
    onError: (error) => logger.warn({ err: error.message, code: error.code }, 'multi-region store'),
    onDecided: (e) => {
      if (e.share === undefined || e.policy.limit === 0) return;
      shares[next] = e.share / e.policy.limit;
      next = (next + 1) % 256;
    },
  });
  const local = links[0] as NonNullable<(typeof links)[number]>;
  return {
    store,
    owned: true,
    ping: local.ping,
    regions: () => ({
      region: store.region,
      mode: store.mode,
      share: shares.length === 0 ? null : shares.reduce((a, b) => a + b, 0) / shares.length,
      peers: store.syncStatus().map((s) => ({
        region: s.region,
        syncAgoMs: s.lastSyncAgoMs,
        lagMs: s.lastLagMs,
        pendingKeys: s.pendingKeys,
        down: s.down,
        failures: s.failures,
        lastErrorCode: s.lastErrorCode,
      })),
    }),
    async close() {
      await Promise.all(links.map((l) => l.close()));
    },
  };
}
