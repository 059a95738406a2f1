/**
 * `POST /admin/explain`: what the service would decide for a request now, and why, without counting it — envoy
 * descriptors, `/v1/check` items or an HTTP request through the gateway's rules.
 */
import type { Clock, Store } from 'sluice';
import type { FailMode } from 'sluice/rules';
import type { AccessLists } from '../../core/access-lists.js';
import type { Explainer } from '../../core/explain.js';
import { parseExplainBody } from './explain-body.js';
import { createCheckExplainer } from './explain-checks.js';

/** Options of {@link createExplainHandler}. */
export interface ExplainHandlerOptions {
  readonly explainer: Explainer;
  readonly store: Store;
  readonly clock: Clock;
  readonly lists: AccessLists;
  /** `/v1/check`'s failure policy. */
  readonly fail: FailMode | undefined;
}

/** The explain answer for a parsed JSON body; throws a coded 400 for a malformed one. */
export function createExplainHandler(options: ExplainHandlerOptions): (body: unknown) => Promise<unknown> {
  const checks = createCheckExplainer(options.store, options.clock, options.lists, options.fail);
  return async (body) => {
    const parsed = parseExplainBody(body);
    if (parsed.kind === 'checks') {
      const results = await checks(parsed.checks);
      const over = results.some((r) => r.allowed === false);
      return { atMs: options.clock.now(), overallCode: over ? 'OVER_LIMIT' : 'OK', checks: results };
    }
    const explained =
      parsed.kind === 'envoy'
        ? await options.explainer.envoy(parsed.request)
        : await options.explainer.http(parsed.request);
    return { atMs: options.clock.now(), ...explained };
  };
}
