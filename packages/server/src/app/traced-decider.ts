/** Tracing around the decider: one span per decision, named and attributed per entry point (gRPC, /json, gateway). */
import type { Decider } from '../core/decide.js';
import type { DecisionSource } from '../observability/decision-events.js';
import type { AttributeValue, Tracer } from '../observability/tracing/tracer.js';
import { grpcStatusOf } from '../protocols/grpc/grpc-server.js';

/** Span names and fixed attributes per entry point (OpenTelemetry's RPC and HTTP conventions). */
const SPANS: Readonly<Record<DecisionSource, { name: string; attributes: Readonly<Record<string, AttributeValue>> }>> =
  {
    grpc: {
      name: 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      attributes: {
        'rpc.system': 'grpc',
        'rpc.service': 'envoy.service.ratelimit.v3.RateLimitService',
        'rpc.method': 'ShouldRateLimit',
      },
    },
    json: { name: 'POST /json', attributes: { 'http.request.method': 'POST', 'http.route': '/json' } },
    gateway: { name: 'gateway', attributes: {} },
    check: { name: 'POST /v1/check', attributes: {} },
  };

/**
 * A decider that records one span per decision — its trace continued from the call's headers — with the
 * domain, the overall code and, over gRPC, the status code. Unsampled calls cost one header lookup.
 */
export function traceDecisions(decider: Decider, tracer: Tracer): Decider {
  return {
    decide(request, source, carrier) {
      const spec = SPANS[source];
      const span = tracer.start(spec.name, carrier, { ...spec.attributes, 'ratelimit.domain': request.domain });
      const decided = decider.decide(request, source, carrier);
      if (span === undefined) return decided;
      return decided.then(
        (answer) => {
          span.end({
            'ratelimit.overall_code': answer.overallCode,
            'ratelimit.descriptors': answer.statuses.length,
            ...(source === 'grpc' ? { 'rpc.grpc.status_code': 0 } : {}),
          });
          return answer;
        },
        (error: unknown) => {
          span.end(source === 'grpc' ? { 'rpc.grpc.status_code': grpcStatusOf(error) } : {}, (error as Error).message);
          throw error;
        },
      );
    },
  };
}
