/** envoy ratelimit's three response headers (LIMIT_RESPONSE_HEADERS_ENABLED) and their names. */
import type { DescriptorStatus } from 'sluice/rules';

/** Names of envoy ratelimit's response headers (`LIMIT_LIMIT_HEADER`, `LIMIT_REMAINING_HEADER`, `LIMIT_RESET_HEADER`). */
export interface EnvoyHeaderNames {
  readonly limit: string;
  readonly remaining: string;
  readonly reset: string;
}

/** envoy ratelimit's default header names. */
export const ENVOY_HEADER_NAMES: EnvoyHeaderNames = {
  limit: 'RateLimit-Limit',
  remaining: 'RateLimit-Remaining',
  reset: 'RateLimit-Reset',
};

/**
 * The headers envoy ratelimit adds with `LIMIT_RESPONSE_HEADERS_ENABLED=true`: the limit, remaining and
 * seconds to reset of the descriptor closest to its limit — or of the last one over its limit (quota-mode
 * descriptors excepted) — and nothing when no descriptor had a limit.
 */
export function envoyHeaders(statuses: readonly DescriptorStatus[], names: EnvoyHeaderNames): Record<string, string> {
  let chosen: DescriptorStatus | undefined;
  let least = Number.POSITIVE_INFINITY;
  for (const s of statuses) {
    if (s.currentLimit !== undefined && s.limitRemaining < least) {
      chosen = s;
      least = s.limitRemaining;
    }
    if (s.code === 'OVER_LIMIT' && !s.quota) {
      chosen = s;
      least = 0;
    }
  }
  const limit = chosen?.currentLimit;
  if (chosen === undefined || limit === undefined) return {};
  return {
    [names.limit]: String(limit.requestsPerUnit),
    [names.remaining]: String(Math.max(0, Math.floor(chosen.limitRemaining))),
    // envoy: whole seconds to the end of the unit's window (at least 1 inside a window).
    [names.reset]: String(Math.ceil(Math.max(0, chosen.durationUntilResetMs) / 1000)),
  };
}
