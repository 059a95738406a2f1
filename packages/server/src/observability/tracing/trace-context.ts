/** W3C trace context: reads the caller's span from a request's headers or gRPC metadata. */
import { Metadata } from '@grpc/grpc-js';

/** The caller's span, from the request's headers: its trace, its span id and whether it was sampled. */
export interface ParentContext {
  readonly traceId: string;
  readonly spanId: string;
  /** Undefined when the caller left the decision to us (B3 without a sampling flag). */
  readonly sampled: boolean | undefined;
}

/** Where the headers of a call are: gRPC metadata (grpc-js), or HTTP/2 and HTTP/1 header objects. */
export type Carrier = Metadata | Readonly<Record<string, string | string[] | undefined>> | undefined;

function header(carrier: Carrier, name: string): string | undefined {
  if (carrier === undefined) return undefined;
  const value = carrier instanceof Metadata ? carrier.get(name)[0] : carrier[name];
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : undefined;
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

function valid(traceId: string, spanId: string): boolean {
  return TRACE_ID.test(traceId) && SPAN_ID.test(spanId) && traceId !== ZERO_TRACE && spanId !== ZERO_SPAN;
}

/**
 * The parent span of a call, as envoy ratelimit's propagators read it: W3C `traceparent` first, then B3
 * (the single `b3` header, then `x-b3-traceid`/`x-b3-spanid`/`x-b3-sampled`). Undefined when there is none,
 * or it is malformed (a new trace starts).
 */
export function extractParent(carrier: Carrier): ParentContext | undefined {
  const traceparent = header(carrier, 'traceparent');
  if (traceparent !== undefined) {
    const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/.exec(traceparent.trim());
    if (m !== null && m[1] !== 'ff' && valid(m[2] as string, m[3] as string)) {
      return {
        traceId: m[2] as string,
        spanId: m[3] as string,
        sampled: (Number.parseInt(m[4] as string, 16) & 1) === 1,
      };
    }
  }
  const b3 = header(carrier, 'b3');
  if (b3 !== undefined) {
    const [traceId = '', spanId = '', flag] = b3.trim().toLowerCase().split('-');
    const id = traceId.length === 16 ? `${'0'.repeat(16)}${traceId}` : traceId;
    if (valid(id, spanId)) {
      return { traceId: id, spanId, sampled: flag === undefined ? undefined : flag === '1' || flag === 'd' };
    }
  }
  const b3Trace = header(carrier, 'x-b3-traceid')?.toLowerCase();
  const b3Span = header(carrier, 'x-b3-spanid')?.toLowerCase();
  if (b3Trace !== undefined && b3Span !== undefined) {
    const id = b3Trace.length === 16 ? `${'0'.repeat(16)}${b3Trace}` : b3Trace;
    const sampled = header(carrier, 'x-b3-sampled');
    const flags = header(carrier, 'x-b3-flags');
    if (valid(id, b3Span)) {
      return {
        traceId: id,
        spanId: b3Span,
        sampled:
          flags === '1' || sampled === '1' || sampled === 'true' ? true : sampled === undefined ? undefined : false,
      };
    }
  }
  return undefined;
}
