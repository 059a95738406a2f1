/** envoy ratelimit's `dynamic_metadata` on a response (RESPONSE_DYNAMIC_METADATA=true). */
import type { DescriptorStatus, RateLimitRequest } from 'sluice/rules';

/**
 * The response's `dynamic_metadata` as envoy ratelimit builds it with `RESPONSE_DYNAMIC_METADATA=true`:
 * the domain, each descriptor (`entries` as `key=value`, its `limit` override and `hitsAddend`), the
 * request's `hitsAddend`, and the `metadata` of the rules whose descriptors passed, merged (the first
 * value of a key wins; maps merge key by key).
 */
export function dynamicMetadata(
  request: RateLimitRequest,
  statuses: readonly DescriptorStatus[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    domain: request.domain,
    descriptors: request.descriptors.map((d) => {
      const one: Record<string, unknown> = { entries: d.entries.map((e) => `${e.key}=${e.value}`) };
      if (d.limit !== undefined)
        one.limit = `requests_per_unit:${d.limit.requestsPerUnit} unit:${String(d.limit.unit).toUpperCase()}`;
      if (d.hitsAddend !== undefined) one.hitsAddend = d.hitsAddend;
      return one;
    }),
  };
  if (request.hitsAddend !== undefined && request.hitsAddend !== 0) out.hitsAddend = request.hitsAddend;
  const merged: Record<string, unknown> = {};
  for (const s of statuses) {
    if (s.code === 'OK' && s.metadata !== undefined) mergeInto(merged, s.metadata);
  }
  if (Object.keys(merged).length > 0) out.metadata = merged;
  return out;
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function mergeInto(into: Record<string, unknown>, from: Readonly<Record<string, unknown>>): void {
  for (const [key, value] of Object.entries(from)) {
    const have = into[key];
    if (have === undefined) into[key] = isMap(value) ? structuredClone(value) : value;
    else if (isMap(have) && isMap(value)) mergeInto(have, value);
  }
}
