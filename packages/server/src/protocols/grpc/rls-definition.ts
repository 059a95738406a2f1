/** `RateLimitService` for grpc-js with sluice's own codec (rls/wire.ts) instead of protobufjs. */
import type { ServiceDefinition } from '@grpc/grpc-js';
import type { Decided } from '../../core/decide.js';
import { decodeRateLimitRequest, encodeDecisionFrame, type WireRequest } from '../../rls/wire.js';
import { SHOULD_RATE_LIMIT_PATH } from './rls-call.js';

/**
 * `RateLimitService` for the @grpc/grpc-js server, with the hand-written codec of wire.ts in place of
 * proto-loader's reflection: requests decode straight into the shape `requestFromMessage` reads, and a
 * decided answer encodes straight into bytes, with no intermediate message object (`responseToMessage`)
 * and no protobufjs walk. The bytes are the same (wire.test.ts checks the codec against protobufjs); a
 * request that does not decode gets INTERNAL "Error deserializing request", as with proto-loader.
 */
export const RLS_SERVICE_DEFINITION: ServiceDefinition = {
  ShouldRateLimit: {
    path: SHOULD_RATE_LIMIT_PATH,
    requestStream: false,
    responseStream: false,
    originalName: 'shouldRateLimit',
    requestDeserialize: (bytes: Buffer): WireRequest => decodeRateLimitRequest(bytes),
    // The frame minus its 5-byte gRPC prefix: grpc-js adds its own.
    responseSerialize: (decided: Decided): Buffer => encodeDecisionFrame(decided).subarray(5),
    // A server only decodes requests and encodes responses.
    requestSerialize: (): Buffer => {
      throw new Error('RLS_SERVICE_DEFINITION serves; use createRlsClient to call');
    },
    responseDeserialize: (): never => {
      throw new Error('RLS_SERVICE_DEFINITION serves; use createRlsClient to call');
    },
  },
};
