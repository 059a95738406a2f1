/** Concurrency leases in Redis: a sorted set per key of lease ids by expiry, acquired and released by script. */
import { randomLeaseId } from '../lease-id.js';
import type { Lease, LeaseDecision } from '../store.js';
import { decodeDecision } from './decode.js';
import { leaseKey, tagOf } from './keys.js';
import type { Runner } from './runner.js';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT } from './scripts.js';

/** The Redis store's acquire and release. */
export function createRedisLeases(runner: Runner, prefix: string, nowArg: (nowMs: number) => string, grace: string) {
  return {
    async acquire(key: string, limit: number, leaseMs: number, nowMs: number): Promise<LeaseDecision> {
      const lkey = leaseKey(tagOf(prefix, key));
      const id = randomLeaseId();
      const args = [nowArg(nowMs), grace, String(limit), String(leaseMs), id];
      const r = (await runner.script(ACQUIRE_SCRIPT, [lkey], args)) as unknown[];
      const d: LeaseDecision = decodeDecision(r, 0, limit);
      if (d.allowed) d.lease = { key, id, expiresAt: Number(r[7]) };
      return d;
    },

    async release(lease: Lease, nowMs: number): Promise<boolean> {
      const lkey = leaseKey(tagOf(prefix, lease.key));
      return Number(await runner.script(RELEASE_SCRIPT, [lkey], [nowArg(nowMs), grace, lease.id])) === 1;
    },
  };
}
