import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { loadRateLimitService } from '../support/proto.js';
import { responseToMessage } from './codec.js';
import {
  decodeOverallCode,
  decodeRateLimitRequest,
  encodeDecisionFrame,
  encodeRateLimitRequestFrame,
  encodeRateLimitResponse,
  encodeRateLimitResponseFrame,
  WireError,
} from './wire.js';

/** protobufjs (through proto-loader) is the reference the hand-written codec must agree with. */
const method = loadRateLimitService().ShouldRateLimit as unknown as {
  requestSerialize(value: unknown): Buffer;
  requestDeserialize(bytes: Buffer): Record<string, unknown>;
  responseSerialize(value: unknown): Buffer;
  responseDeserialize(bytes: Buffer): Record<string, unknown>;
};

const UNITS = ['SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR', 'WEEK'] as const;
const text = fc.string({ maxLength: 12, unit: 'grapheme' });
const uint32 = fc.integer({ min: 0, max: 0xffffffff });

const request = fc.record({
  domain: text,
  descriptors: fc.array(
    fc.record(
      {
        entries: fc.array(fc.record({ key: text, value: text }), { maxLength: 3 }),
        limit: fc.record({ requestsPerUnit: uint32, unit: fc.constantFrom(...UNITS) }),
        hitsAddend: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      },
      { requiredKeys: ['entries'] },
    ),
    { maxLength: 4 },
  ),
  hitsAddend: uint32,
});

const response = fc.record({
  overallCode: fc.constantFrom('OK', 'OVER_LIMIT'),
  statuses: fc.array(
    fc.record(
      {
        code: fc.constantFrom('OK', 'OVER_LIMIT'),
        currentLimit: fc.record({ name: text, requestsPerUnit: uint32, unit: fc.constantFrom(...UNITS) }),
        limitRemaining: uint32,
        durationUntilReset: fc.record({
          seconds: fc.integer({ min: 0, max: 10 ** 10 }),
          nanos: fc.integer({ min: 0, max: 999_999_999 }),
        }),
      },
      { requiredKeys: ['code', 'limitRemaining'] },
    ),
    { maxLength: 4 },
  ),
  responseHeadersToAdd: fc.array(fc.record({ key: text, value: text }), { maxLength: 4 }),
});

/** The fields proto3 leaves out when they hold their default, dropped so both sides compare alike. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === 0 || v === '' || v === null || v === undefined || v === 'UNKNOWN') continue;
    if (Array.isArray(v) && v.length === 0) continue;
    out[k] = normalize(v);
  }
  return out;
}

describe('RLS wire codec', () => {
  it('decodes every request protobufjs encodes, as proto-loader would', () => {
    fc.assert(
      fc.property(request, (req) => {
        const message = {
          ...req,
          descriptors: req.descriptors.map((d) => ({
            ...d,
            ...(d.hitsAddend === undefined ? {} : { hitsAddend: { value: d.hitsAddend } }),
          })),
        };
        const bytes = method.requestSerialize(message);
        assert.deepEqual(normalize(decodeRateLimitRequest(bytes)), normalize(method.requestDeserialize(bytes)));
      }),
      { numRuns: 300 },
    );
  });

  it('encodes requests that protobufjs reads back', () => {
    fc.assert(
      fc.property(request, (req) => {
        const bytes = encodeRateLimitRequestFrame(req).subarray(5);
        const back = method.requestDeserialize(bytes);
        const expected = {
          ...req,
          descriptors: req.descriptors.map((d) => ({
            ...d,
            ...(d.hitsAddend === undefined ? {} : { hitsAddend: { value: d.hitsAddend } }),
          })),
        };
        assert.deepEqual(normalize(back), normalize(expected));
      }),
      { numRuns: 300 },
    );
  });

  it('encodes responses that protobufjs reads back as they were', () => {
    fc.assert(
      fc.property(response, (res) => {
        const mine = encodeRateLimitResponse(res);
        // protobufjs writes explicitly set defaults, proto3 encoders may leave them out: compare meaning.
        assert.deepEqual(normalize(method.responseDeserialize(mine)), normalize(res));
        assert.equal(decodeOverallCode(mine), res.overallCode);
      }),
      { numRuns: 300 },
    );
  });

  it('encodes nested messages of 128 bytes and more (multi-byte lengths)', () => {
    for (const size of [126, 127, 128, 200, 16_383, 16_384, 70_000]) {
      const res = {
        overallCode: 'OVER_LIMIT',
        statuses: [
          {
            code: 'OK',
            currentLimit: { name: 'n'.repeat(size), requestsPerUnit: 5, unit: 'MINUTE' },
            limitRemaining: 3,
          },
        ],
        responseHeadersToAdd: [
          { key: 'k', value: 'v'.repeat(size) },
          { key: 'after', value: 'x' },
        ],
      };
      assert.deepEqual(
        normalize(method.responseDeserialize(encodeRateLimitResponse(res))),
        normalize(res),
        `size ${size}`,
      );
    }
  });

  it('encodes a decided response directly, byte for byte as through the message objects', () => {
    const decided = {
      overallCode: 'OVER_LIMIT' as const,
      statuses: [
        { code: 'OK' as const, limitRemaining: 0, durationUntilResetMs: 0 },
        {
          code: 'OVER_LIMIT' as const,
          currentLimit: {
            name: 'per-ip',
            requestsPerUnit: 10,
            unit: 'SECOND' as const,
            limit: 10,
            periodMs: 1000,
            algorithm: 'fixed-window' as const,
          },
          limitRemaining: 0,
          durationUntilResetMs: 1234.5,
        },
        {
          code: 'OK' as const,
          currentLimit: {
            requestsPerUnit: 5,
            unit: 'DAY' as const,
            limit: 5,
            periodMs: 86_400_000,
            algorithm: 'gcra' as const,
          },
          limitRemaining: 4294967295,
          durationUntilResetMs: 86_399_999,
        },
      ],
      headers: { 'x-ratelimit-limit': '10', ratelimit: '"per-ip";r=0;t=2', 'retry-after': '2' },
    };
    assert.deepEqual(encodeDecisionFrame(decided), encodeRateLimitResponseFrame(responseToMessage(decided) as never));
  });

  it('gives every decided frame bytes of its own (a frame still being sent is not overwritten by the next)', () => {
    const decide = (code: 'OK' | 'OVER_LIMIT', remaining: number, header: string) => ({
      overallCode: code,
      statuses: [{ code, limitRemaining: remaining, durationUntilResetMs: 0 }],
      headers: { 'x-note': header },
    });
    const first = encodeDecisionFrame(decide('OK', 7, 'a'));
    const expected = Buffer.from(first);
    // A response larger than any before (past the reused buffer's size), then small ones again.
    const large = encodeDecisionFrame(decide('OVER_LIMIT', 0, 'x'.repeat(100_000)));
    const second = encodeDecisionFrame(decide('OVER_LIMIT', 3, 'b'));
    assert.deepEqual(first, expected);
    assert.equal(decodeOverallCode(second.subarray(5)), 'OVER_LIMIT');
    assert.equal(large.readUInt32BE(1), large.length - 5);
    assert.deepEqual(method.responseDeserialize(large.subarray(5)).responseHeadersToAdd, [
      { key: 'x-note', value: 'x'.repeat(100_000) },
    ]);
    assert.deepEqual(
      second,
      encodeRateLimitResponseFrame(responseToMessage({ ...decide('OVER_LIMIT', 3, 'b') }) as never),
    );
  });

  it('keeps a descriptor hits_addend of 0 apart from no hits_addend', () => {
    const bytes = encodeRateLimitRequestFrame({
      domain: 'd',
      descriptors: [{ entries: [], hitsAddend: 0 }, { entries: [] }],
    }).subarray(5);
    const decoded = decodeRateLimitRequest(bytes);
    assert.deepEqual(decoded.descriptors[0]?.hitsAddend, { value: 0 });
    assert.equal(decoded.descriptors[1]?.hitsAddend, undefined);
  });

  it('skips unknown fields and rejects truncated bytes', () => {
    // field 9 (varint 7), then domain "d"
    const withUnknown = Buffer.from([0x48, 0x07, 0x0a, 0x01, 0x64]);
    assert.equal(decodeRateLimitRequest(withUnknown).domain, 'd');
    assert.throws(() => decodeRateLimitRequest(Buffer.from([0x0a, 0x05, 0x64])), WireError);
    assert.throws(() => decodeRateLimitRequest(Buffer.from([0x80])), WireError);
    assert.throws(() => decodeRateLimitRequest(Buffer.from([0x0b])), WireError);
  });

  it('reads an over-long uint32 varint as protobufjs does: its low 32 bits, and 11 bytes as malformed', () => {
    // domain "d", then hits_addend (field 3) = 2^64 - 1 as a 10-byte varint (what a 64-bit encoder writes)
    const max64 = Buffer.from([0x0a, 0x01, 0x64, 0x18, ...Array(9).fill(0xff), 0x01]);
    assert.equal(decodeRateLimitRequest(max64).hitsAddend, method.requestDeserialize(max64).hitsAddend);
    assert.equal(decodeRateLimitRequest(max64).hitsAddend, 4294967295);
    // 2^35 + 7 in 6 bytes: the low 32 bits are 7 (protobufjs assumes 10 bytes once past 5, the C++ runtime does not)
    const wide = Buffer.from([0x18, 0x87, 0x80, 0x80, 0x80, 0x80, 0x01]);
    assert.equal(decodeRateLimitRequest(wide).hitsAddend, 7);
    const tooLong = Buffer.from([0x18, ...Array(10).fill(0xff), 0x01]);
    assert.throws(() => decodeRateLimitRequest(tooLong), WireError);
    assert.throws(() => method.requestDeserialize(tooLong));
  });
});
