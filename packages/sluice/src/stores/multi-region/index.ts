/**
 * `sluice/multi-region`: one limit across several data centres, each deciding with its own Redis in
 * one round trip. `'eventual'` mode replicates per-region counters (over the limit by at most a stated
 * bound); `'escrow'` mode splits the limit into per-region shares (never over it). See
 * docs/multi-region.md.
 * @packageDocumentation
 */
export type { OverAdmissionBound } from './bound.js';
export { eventualBound } from './bound.js';
export type { DecidedEvent } from './escrow.js';
export { COUNTER_ALGORITHMS } from './eventual.js';
export type { MultiRegionStore } from './multi-region-store.js';
export { createMultiRegionStore } from './multi-region-store.js';
export type { MultiRegionStoreOptions } from './options.js';
export type { ReplyLimit, ReplyWatcher } from './reply-bound.js';
export { limitReplyBytes } from './reply-bound.js';
export type { PeerStatus } from './sync-loop.js';
