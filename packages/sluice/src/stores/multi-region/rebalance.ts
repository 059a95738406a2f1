/**
 * Where escrow units should go: a pure plan, run by each region for the records it uses, deciding
 * only what *this* region gives away (a region can only give from its own share, so plans made from
 * stale views are still safe — at worst they move units late or back and forth).
 *
 * The target of every region is the limit split in proportion to demand (units asked over the last
 * window or two). A region holding more than its target by at least `minMove` gives the surplus to
 * the regions furthest below theirs. Idle regions keep nothing back, so a load that moves from one
 * region to another pulls the limit along, one sync later.
 */

/** What a region knows of one record. */
export interface RebalanceView {
  readonly limit: number;
  /** This region's share and demand. */
  readonly share: number;
  readonly demand: number;
  /** The other regions, as they last reported; `reachable` = their incarnation is known here. */
  readonly peers: readonly { region: string; share: number; demand: number; reachable: boolean }[];
}

/** A transfer this region should make. */
export interface Gift {
  readonly to: string;
  readonly units: number;
}

/** The transfers this region should make now (empty when the split is close enough). */
export function planGifts(view: RebalanceView): Gift[] {
  const { limit, share, demand, peers } = view;
  const total = demand + peers.reduce((s, p) => s + p.demand, 0);
  if (total <= 0 || limit <= 0) return [];
  const minMove = Math.max(1, Math.ceil(limit / 20));
  const myTarget = Math.ceil((limit * demand) / total);
  let surplus = share - myTarget;
  if (surplus < minMove) return [];
  const needs = peers
    .filter((p) => p.reachable)
    .map((p) => ({ region: p.region, need: Math.floor((limit * p.demand) / total) - p.share }))
    .filter((p) => p.need > 0)
    .sort((a, b) => b.need - a.need || (a.region < b.region ? -1 : 1));
  const gifts: Gift[] = [];
  for (const { region, need } of needs) {
    const units = Math.min(need, surplus);
    if (units <= 0) break;
    gifts.push({ to: region, units });
    surplus -= units;
  }
  return gifts;
}
