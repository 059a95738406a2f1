/** The service's `POST /admin/explain` handler, over the rules in force, the store, the lists and the decision options. */
import type { Clock, Store } from 'sluice';
import type { RulesEngine } from 'sluice/rules';
import type { AccessLists } from '../core/access-lists.js';
import { createExplainer } from '../core/explain.js';
import { createExplainHandler } from '../protocols/http/explain-route.js';
import type { ServiceOptions } from './service-options.js';

/** Explains requests as this service would decide them (its fail, shadow, quota and insurance options). */
export function createServiceExplain(
  options: ServiceOptions,
  parts: {
    readonly engine: RulesEngine;
    readonly store: Store;
    readonly clock: Clock;
    readonly lists: AccessLists;
  },
): (body: unknown) => Promise<unknown> {
  const { engine, store, clock, lists } = parts;
  const explainer = createExplainer({
    ruleSet: () => engine.ruleSet,
    store,
    clock,
    lists,
    decision: {
      ...(options.fail === undefined ? {} : { fail: options.fail }),
      ...(options.shadow === undefined ? {} : { shadow: options.shadow }),
      ...(options.quota === undefined ? {} : { quota: options.quota }),
      ...(options.insuranceShare === undefined ? {} : { insuranceShare: options.insuranceShare }),
    },
  });
  return createExplainHandler({ explainer, store, clock, lists, fail: options.fail });
}
