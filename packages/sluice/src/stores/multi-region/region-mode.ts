/**
 * The multi-region store's mode: in this region, the decisions (eventual counters or escrow shares) and the sync
 * loop that replicates what they changed to the other regions.
 */
import type { ResolvedPolicy } from '../../core/policy.js';
import { DemandLedger } from './demand.js';
import { createEscrowRegion } from './escrow.js';
import { createRecordReplicator, type RecordPart } from './escrow-sync.js';
import { createEventualRegion } from './eventual.js';
import { type CounterPart, createCounterReplicator } from './eventual-sync.js';
import type { ResolvedMultiRegionOptions } from './options.js';
import type { RegionConnections } from './region-connections.js';
import { SyncLoop } from './sync-loop.js';

/** This region's decisions and the loop that syncs them. */
export interface RegionMode {
  readonly region: ReturnType<typeof createEventualRegion>;
  readonly loop: SyncLoop<CounterPart> | SyncLoop<RecordPart>;
}

/** The mode `o.mode` names, on these connections (the loop is made, not started). */
export function createRegionMode(o: ResolvedMultiRegionOptions, connections: RegionConnections): RegionMode {
  return o.mode === 'eventual' ? eventualMode(o, connections) : escrowMode(o, connections);
}

function loopOptions(o: ResolvedMultiRegionOptions, connections: RegionConnections) {
  return {
    peers: connections.peers,
    intervalMs: o.syncIntervalMs,
    clock: o.clock,
    maxPendingKeys: o.maxPendingKeys,
    onError: connections.reportSync,
  };
}

/** Per-region G-counters: a decision touches its hash, the loop merges it into the peers'. */
function eventualMode(o: ResolvedMultiRegionOptions, connections: RegionConnections): RegionMode {
  const loop = new SyncLoop<CounterPart>({
    ...loopOptions(o, connections),
    replicator: createCounterReplicator(connections.syncLocal, o.local.cluster, o.region),
  });
  const region = createEventualRegion(
    connections.local,
    o.prefix,
    o.region,
    o.graceMs,
    (k) => loop.touch(k),
    o.onDecided,
  );
  return { region, loop };
}

/** Escrow shares: a decision records its policy and demand, the loop moves units to where the demand is. */
function escrowMode(o: ResolvedMultiRegionOptions, connections: RegionConnections): RegionMode {
  /** The policy of every record in use, for the sync loop (bounded like the pending sets). */
  const policies = new Map<string, ResolvedPolicy>();
  const demand = new DemandLedger(o.maxPendingKeys);
  const loop = new SyncLoop<RecordPart>({
    ...loopOptions(o, connections),
    replicator: createRecordReplicator({
      local: connections.syncLocal,
      localCluster: o.local.cluster,
      region: o.region,
      regions: o.regionNames,
      graceMs: o.graceMs,
      clock: o.clock,
      policyOf: (k) => policies.get(k),
      takeDemand: (k) => demand.take(k),
      syncIntervalMs: o.syncIntervalMs,
      maxClockSkewMs: o.maxClockSkewMs,
      maxKeys: o.maxPendingKeys,
    }),
  });
  const touch = (rkey: string, policy: ResolvedPolicy, cost: number, atMs: number, tauMs: number) => {
    demand.add(rkey, cost, atMs, tauMs);
    if (policies.get(rkey) !== policy) {
      policies.delete(rkey);
      policies.set(rkey, policy);
      if (policies.size > o.maxPendingKeys) policies.delete(policies.keys().next().value as string);
    }
    loop.touch(rkey);
  };
  const region = createEscrowRegion({
    runner: connections.local,
    prefix: o.prefix,
    region: o.region,
    regions: o.regionNames,
    graceMs: o.graceMs,
    clockSkewMs: o.maxClockSkewMs,
    syncIntervalMs: o.syncIntervalMs,
    touched: touch,
    onDecided: o.onDecided,
  });
  return { region, loop };
}
