/** The keys closest to or over their limits, kept in a bounded table for the dashboard. */
import type { DecisionEvent } from '../decision-events.js';

/** One key of the "closest to or over their limits" list. */
export interface TopKey {
  readonly domain: string;
  readonly rule: string;
  /** The counted key: descriptor entries as `k=v/k=v`, or the `/v1/check` key. */
  readonly key: string;
  readonly limit: number;
  /** What was left after the key's last decision. */
  readonly remaining: number;
  /** Share of the limit in use after the last decision, 0..1. */
  readonly used: number;
  /** True when the last decision rejected (or, in shadow mode, would have). */
  readonly over: boolean;
  readonly shadow: boolean;
  /** Rejections seen since the key was first tracked. */
  readonly rejected: number;
  /** Time left until the counters reset, from now (ms). */
  readonly resetInMs: number;
  /** How long ago the last decision was (ms). */
  readonly lastSeenMsAgo: number;
}

/** Options of {@link createTopKeys}. */
export interface TopKeysOptions {
  /**
   * Keys kept between prunes. When twice as many are tracked, the least pressed half is dropped: a key
   * dropped this way comes back with its true state on its next decision, since every decision carries
   * the key's `remaining`. @default 2048
   */
  capacity?: number;
  /**
   * How long a rejected key stays listed when its reset is sooner, so that a poll every second still
   * sees short rejections. @default 3000
   */
  minVisibleMs?: number;
}

interface Entry {
  domain: string;
  rule: string;
  key: string;
  limit: number;
  remaining: number;
  over: boolean;
  shadow: boolean;
  rejected: number;
  atMs: number;
  resetAtMs: number;
}

/** Tracks the latest state of each key in bounded memory and answers the most pressed ones. */
export interface TopKeys {
  /** Records one decision (ignored when no finite limit decided it, e.g. an allow/deny list entry). */
  add(event: DecisionEvent): void;
  /** The `n` keys closest to or over their limits at `nowMs`: rejected first, then by share used. */
  top(n: number, nowMs: number): TopKey[];
  /** Keys currently tracked (at most twice the capacity). */
  readonly size: number;
}

/**
 * Creates the tracker. Recording updates one map entry in place; the sort happens only on a prune
 * (amortized over `capacity` new keys) and when the dashboard asks, so 10,000+ distinct keys per second
 * cost a map lookup each.
 */
export function createTopKeys(options: TopKeysOptions = {}): TopKeys {
  return new KeyTable(Math.max(1, options.capacity ?? 2048), options.minVisibleMs ?? 3000);
}

/** The tracked keys by `domain\0rule\0key`. */
class KeyTable implements TopKeys {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly capacity: number,
    private readonly minVisibleMs: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** On every decision: one map lookup, the entry updated in place (a new key: one object). */
  add(event: DecisionEvent): void {
    const { limit, remaining } = event;
    if (event.list !== undefined || limit === undefined || remaining === undefined) return;
    if (!Number.isFinite(limit) || limit <= 0) return;
    const id = `${event.domain}\u0000${event.rule}\u0000${event.key}`;
    const over = event.outcome === 'over_limit' || (event.outcome === 'shadow' && remaining <= 0);
    const resetAtMs = event.atMs + Math.max(0, event.resetMs ?? 0);
    const e = this.entries.get(id);
    if (e !== undefined) {
      // Decisions of one key can finish out of order under concurrency; keep the latest.
      if (event.atMs < e.atMs) return;
      e.limit = limit;
      e.remaining = remaining;
      e.over = over;
      e.shadow = event.outcome === 'shadow';
      if (over) e.rejected++;
      e.atMs = event.atMs;
      e.resetAtMs = resetAtMs;
      return;
    }
    this.entries.set(id, {
      domain: event.domain,
      rule: event.rule,
      key: event.key,
      limit,
      remaining,
      over,
      shadow: event.outcome === 'shadow',
      rejected: over ? 1 : 0,
      atMs: event.atMs,
      resetAtMs,
    });
    if (this.entries.size >= this.capacity * 2) this.prune(event.atMs);
  }

  top(n: number, nowMs: number): TopKey[] {
    const live: { e: Entry; s: number }[] = [];
    for (const [id, e] of this.entries) {
      const s = this.score(e, nowMs);
      if (s < 0) this.entries.delete(id);
      else live.push({ e, s });
    }
    live.sort((a, b) => b.s - a.s || b.e.rejected - a.e.rejected || b.e.atMs - a.e.atMs);
    return live.slice(0, n).map(({ e }) => topKeyOf(e, nowMs));
  }

  /** Higher is more pressed; negative once the key's counters have reset. */
  private score(e: Entry, nowMs: number): number {
    const visibleUntil = e.over ? Math.max(e.resetAtMs, e.atMs + this.minVisibleMs) : e.resetAtMs;
    if (nowMs >= visibleUntil) return -1;
    return (e.over ? 2 : 0) + usedOf(e);
  }

  /** Keeps the `capacity` most pressed keys that have not reset. */
  private prune(nowMs: number): void {
    const { entries, capacity } = this;
    const ranked = [...entries].map(([id, e]) => ({ id, s: this.score(e, nowMs), at: e.atMs }));
    ranked.sort((a, b) => b.s - a.s || b.at - a.at);
    for (let i = capacity; i < ranked.length; i++) entries.delete((ranked[i] as { id: string }).id);
    for (const r of ranked.slice(0, capacity)) if (r.s < 0) entries.delete(r.id);
  }
}

/** A tracked key as the dashboard sees it at `nowMs`. */
function topKeyOf(e: Entry, nowMs: number): TopKey {
  return {
    domain: e.domain,
    rule: e.rule,
    key: e.key,
    limit: e.limit,
    remaining: e.remaining,
    used: usedOf(e),
    over: e.over,
    shadow: e.shadow,
    rejected: e.rejected,
    resetInMs: Math.max(0, e.resetAtMs - nowMs),
    lastSeenMsAgo: Math.max(0, nowMs - e.atMs),
  };
}

function usedOf(e: Entry): number {
  if (e.over) return 1;
  return Math.min(1, Math.max(0, (e.limit - e.remaining) / e.limit));
}
