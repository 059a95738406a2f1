/** Checks the SQL stores' fault tests share: hostile keys kept apart, and the failure policies on a stuck store. */
import { strict as assert } from 'node:assert';
import { resolvePolicy } from '../../src/core/policy.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import type { Store } from '../../src/stores/store.js';

/** Keys a hostile client may send: SQL, NULs, lone surrogates, a megabyte. */
export const HOSTILE_KEYS: readonly string[] = [
  "'; DROP TABLE sluice_state; --",
  "\\' OR 1=1 #",
  'a\u0000b',
  'a\u0000c',
  '\ud800',
  '\udc00',
  'x'.repeat(1 << 20),
  `${'x'.repeat(1 << 20)}y`,
];

/** Each hostile key counts on its own: two checks of a limit of 2 leave 1, then 0. */
export async function checkHostileKeys(store: Store): Promise<void> {
  const p = resolvePolicy({ limit: 2, period: '1h' });
  for (const remaining of [1, 0])
    for (const key of HOSTILE_KEYS)
      assert.equal((await store.check(key, p, 1, Date.now(), true)).remaining, remaining, key.slice(0, 20));
}

/** On a store that cannot decide in time, the limiter fails open or closed as told, marking the answer degraded. */
export async function checkFailurePolicies(store: Store): Promise<void> {
  const open = createLimiter({ limit: 1, period: '1h', store, fail: 'open' });
  const closed = createLimiter({ limit: 1, period: '1h', store, fail: 'closed' });
  const a = await open.check('stuck');
  assert.deepEqual([a.allowed, a.degraded], [true, true]);
  const b = await closed.check('stuck');
  assert.deepEqual([b.allowed, b.degraded], [false, true]);
}
