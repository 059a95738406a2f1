/**
 * The debt scenario every store runs (issue 40): a key filled to its limit is charged past it, then probed until a
 * request passes again. The decisions must be the memory store's, step for step, and say exactly when the debt is
 * paid: a request refused with retryAfterMs R is still refused at R − 1 ms and passes at R.
 */
import assert from 'node:assert/strict';
import type { Decision } from '../../src/core/decision.js';
import { ALGORITHMS, type AlgorithmName, type ResolvedPolicy, resolvePolicy } from '../../src/core/policy.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import type { Store } from '../../src/stores/store.js';

/** Aligned to every period used, so windows start at T0. */
export const T0 = 1_700_000_000_000;

/** The policies the scenario runs, one per algorithm: 10 per second. */
export const debtPolicies = (): ResolvedPolicy[] =>
  ALGORITHMS.map((algorithm: AlgorithmName) => resolvePolicy({ algorithm, limit: 10, period: 1000 }));

/** Runs the scenario on `store` for `policy` under `key`; returns every decision, in order. */
export async function runDebt(store: Store, policy: ResolvedPolicy, key: string): Promise<Decision[]> {
  const charge = store.charge;
  assert.ok(charge !== undefined, `${store.name} has charge`);
  const out: Decision[] = [];
  out.push(await store.check(key, policy, 10, T0, true));
  // 7 units more than the limit, owed by a request that already ran.
  const [owed] = await charge.call(store, [{ key, policy, cost: 7 }], T0 + 1);
  out.push(owed as Decision);
  let now = T0 + 1;
  for (let step = 0; step < 8; step++) {
    const refused = await store.check(key, policy, 1, now, true);
    out.push(refused);
    if (refused.allowed) break;
    // Exactly as the decision says: one millisecond early is still refused, on time passes.
    out.push(await store.check(key, policy, 1, now + refused.retryAfterMs - 1, false));
    now += refused.retryAfterMs;
  }
  return out;
}

/** The scenario's decisions on a fresh memory store: what every other store must give. */
export async function memoryDebt(policy: ResolvedPolicy): Promise<Decision[]> {
  const memory = createMemoryStore({ sweepIntervalMs: 0 });
  try {
    return await runDebt(memory, policy, 'k');
  } finally {
    await memory.close();
  }
}

/** The semantics on the memory store's decisions: charged into debt, refused until paid, then allowed. */
export function assertDebtSemantics(decisions: readonly Decision[], algorithm: AlgorithmName): void {
  const [filled, owed, ...probes] = decisions as [Decision, Decision, ...Decision[]];
  assert.equal(filled.allowed, true, algorithm);
  assert.equal(owed.allowed, false, `${algorithm}: the charge put the key in debt`);
  assert.ok(owed.retryAfterMs > 0, `${algorithm}: the debt takes time to pay`);
  assert.equal(owed.remaining, 0, `${algorithm}: remaining never below 0`);
  assert.equal(probes.at(-1)?.allowed, true, `${algorithm}: the key passes once its debt is paid`);
  for (let i = 0; i + 1 < probes.length; i += 2) {
    assert.equal(probes[i]?.allowed, false, `${algorithm}: refused while in debt`);
    assert.equal(probes[i + 1]?.allowed, false, `${algorithm}: still refused 1 ms before retryAfterMs`);
  }
}
