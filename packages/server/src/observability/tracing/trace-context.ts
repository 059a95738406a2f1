/** Where a call's trace headers are (gRPC metadata or HTTP headers), read for OpenTelemetry's propagators (W3C trace context, B3). */
import { Metadata } from '@grpc/grpc-js';

/** Where the headers of a call are: gRPC metadata (grpc-js), or HTTP/2 and HTTP/1 header objects. */
export type Carrier = Metadata | Readonly<Record<string, string | string[] | undefined>> | undefined;

/** The longest header value a propagator is given: trace headers are short, a hostile one is cut off. */
const MAX_HEADER = 1024;

/** One header of a call, its first value (OpenTelemetry's TextMapGetter.get). */
export function headerOf(carrier: Carrier, name: string): string | undefined {
  if (carrier === undefined) return undefined;
  const value = carrier instanceof Metadata ? carrier.get(name)[0] : carrier[name];
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' && first.length <= MAX_HEADER ? first : undefined;
}

/** The header names of a call (OpenTelemetry's TextMapGetter.keys). */
export function headerNames(carrier: Carrier): string[] {
  if (carrier === undefined) return [];
  return carrier instanceof Metadata ? Object.keys(carrier.getMap()) : Object.keys(carrier);
}
