/**
 * The stat names envoyproxy/ratelimit sends (gostats scopes and suffixes) and the Prometheus names its
 * USE_PROMETHEUS sink maps them to, read from its source: src/stats/manager_impl.go, src/metrics/metrics.go,
 * src/service_cmd/runner/runner.go and src/stats/prom/default_mapper.yaml.
 */

/** `store.ScopeWithTags("ratelimit", EXTRA_TAGS).Scope("service")` (stats/manager_impl.go). */
export const SERVICE_SCOPE = 'ratelimit.service';
/** Per-descriptor counters: `<SERVICE_SCOPE>.rate_limit.<key>.<suffix>`. */
export const RATE_LIMIT_SCOPE = `${SERVICE_SCOPE}.rate_limit`;
/** Panics recovered in ShouldRateLimit: `<scope>.redis_error`, `<scope>.service_error`. */
export const SHOULD_RATE_LIMIT_SCOPE = `${SERVICE_SCOPE}.call.should_rate_limit`;
/** The gRPC interceptor's scope (`ScopeWithTags("ratelimit_server", EXTRA_TAGS)`, runner.go; metrics.go). */
export const SERVER_SCOPE = 'ratelimit_server';
/** The one gRPC method sluice's envoy service answers. */
export const SHOULD_RATE_LIMIT_METHOD = 'ShouldRateLimit';

/** A rate limit's counters (RateLimitStats in stats/manager.go), in NewStats' order. */
export const HIT_SUFFIXES = [
  'total_hits',
  'over_limit',
  'near_limit',
  'over_limit_with_local_cache',
  'within_limit',
  'shadow_mode',
] as const;
export type HitSuffix = (typeof HIT_SUFFIXES)[number];

/** The service's counters (ServiceStats, ShouldRateLimitStats, DomainStats), as statsd names. */
export const SERVICE_COUNTERS = {
  configLoadSuccess: `${SERVICE_SCOPE}.config_load_success`,
  configLoadError: `${SERVICE_SCOPE}.config_load_error`,
  globalShadowMode: `${SERVICE_SCOPE}.global_shadow_mode`,
  redisError: `${SHOULD_RATE_LIMIT_SCOPE}.redis_error`,
  serviceError: `${SHOULD_RATE_LIMIT_SCOPE}.service_error`,
} as const;

/** `<RATE_LIMIT_SCOPE>.<domain>.domain_not_found` (NewDomainStats). */
export const DOMAIN_NOT_FOUND = 'domain_not_found';
/** `ratelimit_server.<method>.total_requests` (counter) and `.response_time` (timer, whole milliseconds). */
export const TOTAL_REQUESTS = 'total_requests';
export const RESPONSE_TIME = 'response_time';

/** Prometheus names of default_mapper.yaml (PROMETHEUS_MAPPER_YAML unset). */
export const PROMETHEUS_NAMES = {
  /** `ratelimit_service_rate_limit_<suffix>{domain, key1[, key2]}`, for the five mapped suffixes. */
  hitPrefix: 'ratelimit_service_rate_limit_',
  shouldRateLimitError: 'ratelimit_service_should_rate_limit_error',
  totalRequests: 'ratelimit_service_total_requests',
  responseTime: 'ratelimit_service_response_time_seconds',
  configLoadSuccess: 'ratelimit_service_config_load_success',
  configLoadError: 'ratelimit_service_config_load_error',
} as const;

/** The hit suffixes default_mapper.yaml maps (over_limit_with_local_cache is not among them). */
export const MAPPED_HIT_SUFFIXES: readonly HitSuffix[] = [
  'near_limit',
  'over_limit',
  'total_hits',
  'within_limit',
  'shadow_mode',
];

/** The statsd exporter's default histogram buckets (client_golang's DefBuckets), in seconds. */
export const RESPONSE_TIME_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
