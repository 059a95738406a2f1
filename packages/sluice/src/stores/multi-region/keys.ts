/**
 * Key names of the multi-region store, in every region's Redis. All keys of one user key share the
 * Redis store's hash tag (`prefix{escaped key}`), so one script can touch them on a Cluster too; the
 * character after the tag says what the key holds, and none of them is one the Redis store uses
 * (`:`, `!`, `#`), so both stores can share a prefix without ever reading each other's state.
 *
 *   tag=<policy>@<window>  eventual: the G-counter of one window (a hash, field per region)
 *   tag=<policy>           eventual: the newest window a region has seen (for reset)
 *   tag%<policy>           escrow: this region's lease record (share, epochs, demand)
 *   tag%<policy>~          escrow: its transfers (units given to and received from each region)
 *   tag^<policy>^<inc>.<e> escrow: the algorithm state of one lease epoch (built inside the script)
 *   tag|<policy>           a block (blockDuration), local to the region
 */
import { tagOf } from '../redis/keys.js';

export { tagOf };

/** The G-counter hash of `window`. */
export const counterKey = (tag: string, policyId: string, window: number) => `${tag}=${policyId}@${window}`;
/** The newest window seen for a (key, policy). */
export const markerKey = (tag: string, policyId: string) => `${tag}=${policyId}`;
/** The escrow lease record of a (key, policy). */
export const leaseRecordKey = (tag: string, policyId: string) => `${tag}%${policyId}`;
/** The block of a (key, policy) in this region. */
export const regionBlockKey = (tag: string, policyId: string) => `${tag}|${policyId}`;

/** The window a counter key belongs to (the number after the last `@`). */
export function windowOfCounterKey(key: string): number {
  return Number(key.slice(key.lastIndexOf('@') + 1));
}

/** The marker key of a counter key (everything before the last `@`). */
export function markerOfCounterKey(key: string): string {
  return key.slice(0, key.lastIndexOf('@'));
}
