/**
 * A guard against two middlewares silently sharing counters: each claims its policies' counters on a store, and a
 * second claim is an error unless both say `shared: true`.
 */

import { optionError } from '../core/errors.js';
import type { Store } from '../stores/store.js';

/** Who counts under a counter namespace of a store. */
interface Owner {
  readonly shared: boolean;
  readonly label: string;
}

/** Per store, the counter namespaces (policy ids, scope included) that a middleware counts under. */
const owners = new WeakMap<Store, Map<string, Owner>>();

/**
 * Claims a store's counters for one middleware. Two middlewares with the same policy on one store
 * count under the same keys, so a request to one uses up the other (`/b` answers 429 after only `/a`
 * was called) — right when meant, a silent bug when not. Claiming them twice is therefore an error at
 * construction unless both sides say `shared: true`; distinct `name`s keep the counters apart.
 *
 * @param ids - the policy ids the middleware counts under (each includes the middleware's name).
 * @param label - describes the limit in the message (`"'default' (fixed-window 100 per 60000 ms)"`).
 * @throws SluiceError `ERR_SLUICE_SHARED_COUNTERS`
 */
export function claimCounters(
  store: Store,
  claims: readonly { readonly id: string; readonly label: string }[],
  shared: boolean,
): void {
  let table = owners.get(store);
  if (table === undefined) {
    table = new Map();
    owners.set(store, table);
  }
  for (const { id, label } of claims) {
    const previous = table.get(id);
    if (previous !== undefined && !(previous.shared && shared)) {
      throw optionError(
        'name',
        `limit ${label} is already counted by another rateLimit() on this ${store.name} store, so the two ` +
          `would share counters (a request to one uses up the other). Give each middleware its own name ` +
          `(rateLimit({ name: 'api', … })), or pass shared: true to both to share them on purpose.`,
        'ERR_SLUICE_SHARED_COUNTERS',
      );
    }
  }
  for (const { id, label } of claims) table.set(id, { shared, label });
}
