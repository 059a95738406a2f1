/** The RLS method's path on the wire: what every gRPC server and client of Envoy's rate limit service names. */

/** envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, as gRPC names it in `:path`. */
export const SHOULD_RATE_LIMIT_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
