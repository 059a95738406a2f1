/**
 * What an algorithm is: a deterministic step that decides one request from a key's state and writes the new state in
 * place, with no I/O, clock or timers, so every store can make the same decisions.
 */
import type { Decision } from '../core/decision.js';
import type { AlgorithmName, ResolvedPolicy } from '../core/policy.js';

/**
 * Numeric state of one key: three numbers at `slots[offset..offset+2]`, all zero for a key never
 * seen. The memory store keeps every key's numbers in one Float64Array, so a check allocates
 * nothing but its Decision; tests pass a `new Float64Array(3)` (or a plain array) and offset 0.
 */
export type Slots = { [index: number]: number };

/**
 * One rate-limiting algorithm, as a deterministic step: no I/O, no clock, no timers.
 *
 * `check` decides a request of `cost` units at `nowMs`. It writes the new state back into the slots
 * only when the request is allowed, `commit` is true and `cost > 0`: a rejected check, a peek
 * (`commit = false`) and a cost-0 check all leave the state exactly as it was. Writing in place
 * rather than returning a new state is what lets the memory store run without allocating per call.
 */
export interface Algorithm<S = Slots> {
  readonly name: AlgorithmName;
  check(state: S, offset: number, nowMs: number, policy: ResolvedPolicy, cost: number, commit: boolean): Decision;
  /**
   * Takes `cost` units whether or not they fit — a settle's extra, owed for a request that already ran. The state
   * may go past the limit (debt, at most MAX_DEBT of debt.ts), and later checks are refused until it is paid off.
   * Returns what a cost-0 look sees afterwards: allowed iff the key is not in debt, `retryAfterMs` the time until
   * its debt is paid, `remaining` never below 0.
   */
  charge(state: S, offset: number, nowMs: number, policy: ResolvedPolicy, cost: number): Decision;
  /**
   * Gives back `cost` units taken earlier, at `takenAtMs` (default `nowMs`), never beyond full capacity. The units go
   * back only to what counted them: a window that has ended since gives nothing to the current one (else a request
   * refunded after the window rolled would free room it never took).
   */
  refund(state: S, offset: number, nowMs: number, policy: ResolvedPolicy, cost: number, takenAtMs?: number): void;
  /** The instant (ms since the epoch) from which this state equals a fresh one and can be forgotten. */
  expiresAt(state: S, offset: number, policy: ResolvedPolicy): number;
}
