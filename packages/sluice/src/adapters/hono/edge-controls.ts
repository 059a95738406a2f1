/**
 * `resetKey`, `penalty` and `block` of the edge build of `sluice/hono`, as every adapter has them: on every policy the
 * middleware counts under, and a block kept in the process (it rejects before the store is asked). The same steps as
 * http/controls.ts's `createControls`, over a store and its policies instead of the full middleware's limiters (whose
 * code would double this build's share of a Worker).
 */

import { parseDuration } from '../../core/duration.js';
import { SluiceError } from '../../core/errors.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { RateLimitControls } from '../../http/controls.js';
import type { Store } from '../../stores/store.js';

/** Most keys blocked at once; past it the oldest block is dropped (a process can hold them all). */
const MAX_BLOCKS = 100_000;

function keyOf(key: unknown, method: string): string {
  if ((typeof key === 'string' && key !== '') || (typeof key === 'number' && Number.isFinite(key))) return String(key);
  throw new SluiceError('ERR_SLUICE_INVALID_KEY', `${method}: expected a non-empty string or a number as the key`);
}

/**
 * The controls over `store`. `policies` lists what a key may be counted under now; `blocks` maps a key to the
 * instant (ms since the epoch) its block ends, read by the middleware.
 */
export function createEdgeControls(
  store: Store,
  policies: () => ResolvedPolicy[],
  blocks: Map<string, number>,
  now: () => number,
): RateLimitControls {
  async function penalty(key: string | number, units = 1): Promise<void> {
    const k = keyOf(key, 'penalty');
    if (!(Number.isInteger(units) && units >= 1 && units <= 1e9))
      throw new SluiceError('ERR_SLUICE_INVALID_COST', `penalty: ${String(units)} is not a whole number ≥ 1`);
    const items = policies().map((policy) => ({ key: k, policy, cost: units }));
    const decisions = await store.checkMany(items, now(), true);
    if (decisions.every((d) => d.allowed)) return;
    // Not all of it fits: take what is left under every limit (the least of their remainders).
    const left = Math.min(...decisions.map((d) => d.remaining));
    if (left > 0 && Number.isFinite(left))
      await store.checkMany(
        items.map((i) => ({ ...i, cost: left })),
        now(),
        true,
      );
  }
  return {
    async resetKey(key) {
      const k = keyOf(key, 'resetKey');
      blocks.delete(k);
      for (const policy of policies()) await store.reset(k, policy);
    },
    penalty,
    async block(key, duration) {
      const k = keyOf(key, 'block');
      const ms = parseDuration(duration, 'block');
      if (ms < 1) throw new SluiceError('ERR_SLUICE_INVALID_DURATION', 'block: the duration must be at least 1 ms');
      if (blocks.size >= MAX_BLOCKS) blocks.delete(blocks.keys().next().value as string);
      blocks.set(k, now() + ms);
      // Its quota used up as well, as every adapter's block does: the key starts from empty when the block ends.
      await penalty(k, Math.max(1, ...policies().map((p) => p.capacity)));
    },
  };
}
