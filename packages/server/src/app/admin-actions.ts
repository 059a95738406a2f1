/** What the admin API does to a running service: reset keys, inspect a key, reload the config. */
import type { Clock, Store } from 'sluice';
import { isSluiceError, resolvePolicy } from 'sluice';
import type { RulesEngine } from 'sluice/rules';
import type { ConfigSource } from '../config/config-source.js';
import type { AdminActions } from '../protocols/http/admin-routes.js';
import { CHECK_KEY_PREFIX } from '../protocols/http/check-api.js';
import { HttpError, isObject } from '../protocols/http/respond.js';
import { requestFromMessage, responseToJson } from '../rls/codec.js';

/** Options of {@link createAdminActions}. */
export interface AdminActionsOptions {
  engine: RulesEngine;
  store: Store;
  clock: Clock;
  config: ConfigSource;
}

/**
 * What `/admin` does. A key is named the way it is asked about: `{"domain", "descriptors"}` as in
 * `/json`, or a `/v1/check` item `{"key", "limit", "period", "algorithm"?, "burst"?}`.
 */
export function createAdminActions(options: AdminActionsOptions): AdminActions {
  const { engine, store, clock, config } = options;

  function checkItem(body: Record<string, unknown>) {
    const { key, ...policy } = body;
    if (typeof key !== 'string' || key === '')
      throw new HttpError(400, 'ERR_SLUICE_INVALID_KEY', 'key: expected a non-empty string');
    try {
      return { key: CHECK_KEY_PREFIX + key, policy: resolvePolicy(policy as never) };
    } catch (error) {
      if (isSluiceError(error)) throw new HttpError(400, error.code, error.message);
      throw error;
    }
  }

  function envoyRequest(body: Record<string, unknown>) {
    const request = requestFromMessage(body);
    // Looking never counts: every descriptor asks for 0 hits.
    return { ...request, descriptors: request.descriptors.map((d) => ({ ...d, hitsAddend: 0 })) };
  }

  return {
    async reload() {
      const result = await config.reload();
      return result.ok
        ? { ok: true, files: result.files, domains: [...result.ruleSet.domains.keys()] }
        : { ok: false, files: result.files, issues: result.issues };
    },
    async inspect(body) {
      if (!isObject(body)) throw new HttpError(400, 'ERR_SLUICE_INVALID_REQUEST', 'expected a JSON object');
      if ('domain' in body) {
        const response = await engine.shouldRateLimit(envoyRequest(body));
        return responseToJson({ ...response, headers: {} });
      }
      const { key, policy } = checkItem(body);
      const d = await store.check(key, policy, 0, clock.now(), false);
      return { ...d, retryAfterMs: Number.isFinite(d.retryAfterMs) ? d.retryAfterMs : null };
    },
    async reset(body) {
      if (!isObject(body)) throw new HttpError(400, 'ERR_SLUICE_INVALID_REQUEST', 'expected a JSON object');
      if ('domain' in body) {
        await engine.reset(envoyRequest(body));
        return { reset: true };
      }
      const { key, policy } = checkItem(body);
      await store.reset(key, policy);
      return { reset: true };
    },
  };
}
