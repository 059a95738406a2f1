/**
 * Concurrency leases for the store kit: one key's live leases as stored text, and the pure acquire and release steps
 * (the memory store's lease table's answers, on a state a database keeps).
 */
import { leaseRefusal } from '../lease-refusal.js';
import type { Lease, LeaseDecision } from '../store.js';

/** A key's live leases as (id, expiresAt) pairs. */
type Leases = [string, number][];

/** The stored text back as the leases still live at `nowMs` (unreadable text: none). */
export function liveLeases(text: string | undefined, nowMs: number): Leases {
  if (!text) return [];
  try {
    const parsed = JSON.parse(text) as { l?: Leases };
    return (parsed.l ?? []).filter((entry) => Array.isArray(entry) && Number(entry[1]) > nowMs);
  } catch {
    return [];
  }
}

/** The leases as stored text, and when the row may go (the latest lease's end). */
export function storedLeases(leases: Leases): { state: string; expiresAt: number } | null {
  if (leases.length === 0) return null;
  return { state: JSON.stringify({ l: leases }), expiresAt: Math.max(...leases.map((l) => l[1])) };
}

/** Takes one of `limit` slots for `leaseMs` when one is free; `leases` gains the new lease then. */
export function acquireOnLeases(
  leases: Leases,
  key: string,
  limit: number,
  leaseMs: number,
  nowMs: number,
  newId: string,
): LeaseDecision {
  const latest = leases.length === 0 ? 0 : Math.max(...leases.map((l) => l[1])) - nowMs;
  if (leases.length >= limit) {
    const soonest = leases.length === 0 ? 0 : Math.min(...leases.map((l) => l[1])) - nowMs;
    return leaseRefusal(limit, latest, soonest);
  }
  const lease: Lease = { key, id: newId, expiresAt: nowMs + leaseMs };
  leases.push([lease.id, lease.expiresAt]);
  return {
    allowed: true,
    limit,
    remaining: limit - leases.length,
    resetMs: Math.max(latest, leaseMs),
    retryAfterMs: 0,
    lease,
  };
}

/** Ends a lease: false when it was unknown or had lapsed. */
export function releaseOnLeases(leases: Leases, id: string): boolean {
  const index = leases.findIndex((l) => l[0] === id);
  if (index === -1) return false;
  leases.splice(index, 1);
  return true;
}
