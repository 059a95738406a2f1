/** How the kit keeps a key's state in a row: the row's id, the state a row holds now, and what to write back. */
import type { ResolvedPolicy } from '../../core/policy.js';
import { decodeKeyState, encodeKeyState, type KeyState, keyStateExpiresAt } from './key-state.js';
import type { StateWrite, StoredState } from './state-backend.js';

/** The row id of (policy, key): the policy id's length first, so no key can pose as another policy's. */
export const stateId = (p: ResolvedPolicy, key: string) => `P${p.id.length}:${p.id}:${key}`;
/** The row of a key's concurrency leases. */
export const leaseId = (key: string) => `L:${key}`;

/** A stored state as a key's state at `nowMs`: an expired or absent row is a fresh key. */
export const liveState = (row: StoredState | undefined, nowMs: number): KeyState =>
  row === undefined || row.expiresAt <= nowMs ? decodeKeyState(undefined) : decodeKeyState(row.state);

/** What to write for a state after a step: nothing changed, delete (as good as fresh), or the new state. */
export function writeOf(
  before: StoredState | undefined,
  state: KeyState,
  p: ResolvedPolicy,
  nowMs: number,
): StateWrite {
  const expiresAt = keyStateExpiresAt(state, p);
  if (expiresAt <= nowMs) return before === undefined ? undefined : null;
  const text = encodeKeyState(state);
  if (before !== undefined && before.state === text && before.expiresAt === expiresAt) return undefined;
  return { state: text, expiresAt };
}
