/**
 * One key's stored state for the store kit, and the pure step that decides a request on it: the same algorithm steps the
 * memory store runs, so a store built on the kit makes the memory store's decisions without algorithm code of its own.
 */
import { NUMERIC_ALGORITHMS } from '../../algorithms/index.js';
import { SlidingLogState, slidingLog } from '../../algorithms/sliding-log.js';
import type { Decision } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';

/**
 * What a kit store keeps per (policy, key): the algorithm's three numbers or a sliding log, and a block.
 * It travels as JSON of numbers only (see {@link encodeKeyState}), so any database column of text holds it.
 */
export interface KeyState {
  /** The numeric algorithms' three numbers. */
  s: [number, number, number];
  /** The sliding log's (time, units) pairs, oldest first. */
  log?: number[];
  /** Rejected until this instant (ms since the epoch) after a rejection under a policy with blockMs; 0: none. */
  b: number;
}

/** A fresh key's state: what a key never seen (or expired) decides on. */
export const freshKeyState = (): KeyState => ({ s: [0, 0, 0], b: 0 });

/** The state as stored: JSON whose only characters are digits, signs, dots, `e`, brackets, commas, quotes and letters of the field names. */
export function encodeKeyState(state: KeyState): string {
  return JSON.stringify(state);
}

/** The stored text back as a state; anything unreadable counts as a fresh key (never as a reason to fail open). */
export function decodeKeyState(text: string | undefined | null): KeyState {
  if (!text) return freshKeyState();
  try {
    const parsed = JSON.parse(text) as Partial<KeyState>;
    const s = Array.isArray(parsed.s) && parsed.s.length === 3 ? (parsed.s as KeyState['s']) : [0, 0, 0];
    const state: KeyState = { s: [Number(s[0]), Number(s[1]), Number(s[2])], b: Number(parsed.b) || 0 };
    if (Array.isArray(parsed.log)) state.log = parsed.log.map(Number);
    return state;
  } catch {
    return freshKeyState();
  }
}

/** The rejection of a blocked key. */
function blockedDecision(p: ResolvedPolicy, until: number, nowMs: number): Decision {
  return {
    allowed: false,
    limit: p.limit,
    remaining: 0,
    resetMs: until - nowMs,
    retryAfterMs: until - nowMs,
    reason: 'blocked',
  };
}

/** Runs the policy's algorithm step on the state, in place; `block`: a rejection blocks the key (when the policy says so). */
function runStep(state: KeyState, p: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Decision {
  if (p.algorithm !== 'sliding-log') return NUMERIC_ALGORITHMS[p.algorithm].check(state.s, 0, nowMs, p, cost, commit);
  const log = new SlidingLogState();
  log.entries = state.log ?? [];
  for (let i = 1; i < log.entries.length; i += 2) log.total += log.entries[i] as number;
  const decision = slidingLog.check(log, 0, nowMs, p, cost, commit);
  state.log = log.entries.slice(log.head);
  return decision;
}

/**
 * Decides one request on `state` at `nowMs`, writing the new state in place (only an admitted, committed request of
 * cost > 0 changes the counts; a committed rejection under a policy with blockMs writes a block unless `noBlock`).
 */
export function decideOnState(
  state: KeyState,
  p: ResolvedPolicy,
  cost: number,
  nowMs: number,
  commit: boolean,
  noBlock = false,
): Decision {
  if (p.blockMs > 0 && state.b > nowMs) return blockedDecision(p, state.b, nowMs);
  const decision = runStep(state, p, cost, nowMs, commit);
  if (!decision.allowed && commit && p.blockMs > 0 && !noBlock) state.b = nowMs + p.blockMs;
  return decision;
}

/** Takes `cost` on `state` even past the limit (Store.charge); blocks are neither checked nor written. */
export function chargeOnState(state: KeyState, p: ResolvedPolicy, cost: number, nowMs: number): Decision {
  if (p.algorithm !== 'sliding-log') return NUMERIC_ALGORITHMS[p.algorithm].charge(state.s, 0, nowMs, p, cost);
  const log = new SlidingLogState();
  log.entries = state.log ?? [];
  for (let i = 1; i < log.entries.length; i += 2) log.total += log.entries[i] as number;
  const decision = slidingLog.charge(log, 0, nowMs, p, cost);
  state.log = log.entries.slice(log.head);
  return decision;
}

/** Gives back `cost` units taken at `takenAtMs` on `state` at `nowMs` (never beyond full capacity). */
export function refundOnState(
  state: KeyState,
  p: ResolvedPolicy,
  cost: number,
  nowMs: number,
  takenAtMs = nowMs,
): void {
  if (p.algorithm !== 'sliding-log') {
    NUMERIC_ALGORITHMS[p.algorithm].refund(state.s, 0, nowMs, p, cost, takenAtMs);
    return;
  }
  const log = new SlidingLogState();
  log.entries = state.log ?? [];
  for (let i = 1; i < log.entries.length; i += 2) log.total += log.entries[i] as number;
  slidingLog.refund(log, 0, nowMs, p, cost, takenAtMs);
  state.log = log.entries.slice(log.head);
}

/**
 * The instant from which `state` equals a fresh one and its row can be deleted; at or before `nowMs` means the row
 * need not be kept at all.
 */
export function keyStateExpiresAt(state: KeyState, p: ResolvedPolicy): number {
  let at: number;
  if (p.algorithm === 'sliding-log') {
    const entries = state.log ?? [];
    at = entries.length === 0 ? 0 : (entries[entries.length - 2] as number) + p.periodMs;
  } else {
    const zero = state.s[0] === 0 && state.s[1] === 0 && state.s[2] === 0;
    at = zero ? 0 : NUMERIC_ALGORITHMS[p.algorithm].expiresAt(state.s, 0, p);
  }
  return Math.max(at, state.b);
}
