/**
 * envoy ratelimit's xDS resource, `ratelimit.config.ratelimit.v3.RateLimitConfig`: decoded from its
 * protobuf bytes with the shipped proto, and turned into the same rule source a YAML file would be, so
 * xDS rules go through exactly the validation files do.
 */
import protobuf from 'protobufjs';
import type { RuleSource } from 'sluice/rules';
import { PROTO_DIR } from '../../support/proto.js';

/** The type URL of the resource in DiscoveryResponses. */
export const RATE_LIMIT_CONFIG_TYPE_URL = 'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig';

let root: protobuf.Root | undefined;

/** The protobufjs root of the shipped xDS protos (loaded once). */
export function xdsProtoRoot(): protobuf.Root {
  if (root !== undefined) return root;
  const r = new protobuf.Root();
  // Imports are relative to proto/; google/protobuf/* are protobufjs' own.
  r.resolvePath = (_origin, target) =>
    target.startsWith('/') || target.startsWith('google/protobuf/') ? target : `${PROTO_DIR}${target}`;
  r.loadSync(
    ['ratelimit/config/ratelimit/v3/rls_conf.proto', 'envoy/service/discovery/v3/discovery.proto'].map(
      (f) => `${PROTO_DIR}${f}`,
    ),
  );
  r.resolveAll();
  root = r;
  return r;
}

interface PolicyMessage {
  unit?: string;
  requestsPerUnit?: number;
  unlimited?: boolean;
  name?: string;
  replaces?: { name?: string }[];
}

interface DescriptorMessage {
  key?: string;
  value?: string;
  rateLimit?: PolicyMessage;
  descriptors?: DescriptorMessage[];
  shadowMode?: boolean;
  detailedMetric?: boolean;
  quotaMode?: boolean;
  metadata?: Record<string, unknown>;
}

/** A decoded RateLimitConfig. */
export interface RateLimitConfigMessage {
  name?: string;
  domain?: string;
  descriptors?: DescriptorMessage[];
}

interface StructValue {
  nullValue?: unknown;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: { fields?: Record<string, StructValue> };
  listValue?: { values?: StructValue[] };
}

/** A google.protobuf.Struct (as protobufjs decodes it) as the plain JSON it holds. */
function plainStruct(struct: { fields?: Record<string, StructValue> } | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(struct?.fields ?? {}).map(([k, v]) => [k, plainValue(v)]));
}

function plainValue(v: StructValue): unknown {
  if (v.structValue !== undefined) return plainStruct(v.structValue);
  if (v.listValue !== undefined) return (v.listValue.values ?? []).map(plainValue);
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.numberValue !== undefined) return v.numberValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return null;
}

function withPlainMetadata(d: DescriptorMessage): DescriptorMessage {
  const out: DescriptorMessage = { ...d };
  if (d.metadata !== undefined) out.metadata = plainStruct(d.metadata as never);
  if (d.descriptors !== undefined) out.descriptors = d.descriptors.map(withPlainMetadata);
  return out;
}

/** Decodes a RateLimitConfig's bytes (enums by name, `metadata` as plain JSON). Throws on bytes that are not one. */
export function decodeRateLimitConfig(bytes: Uint8Array): RateLimitConfigMessage {
  const type = xdsProtoRoot().lookupType('ratelimit.config.ratelimit.v3.RateLimitConfig');
  const message = type.toObject(type.decode(bytes), {
    enums: String,
    longs: Number,
    defaults: false,
  }) as RateLimitConfigMessage;
  return message.descriptors === undefined
    ? message
    : { ...message, descriptors: message.descriptors.map(withPlainMetadata) };
}

/** Encodes a RateLimitConfig (for management servers in tests and tools). */
export function encodeRateLimitConfig(config: RateLimitConfigMessage): Uint8Array {
  const type = xdsProtoRoot().lookupType('ratelimit.config.ratelimit.v3.RateLimitConfig');
  return type.encode(type.fromObject(config)).finish();
}

function descriptor(d: DescriptorMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { key: d.key ?? '' };
  if (d.value) out.value = d.value;
  const p = d.rateLimit;
  if (p !== undefined) {
    const limit: Record<string, unknown> = {};
    if (p.unlimited) limit.unlimited = true;
    // An unset unit is UNKNOWN, which envoy refuses unless the limit is unlimited: keep it for the parser to say so.
    if (!p.unlimited || (p.unit !== undefined && p.unit !== 'UNKNOWN'))
      limit.unit = (p.unit ?? 'UNKNOWN').toLowerCase();
    if (!p.unlimited) limit.requests_per_unit = p.requestsPerUnit ?? 0;
    if (p.name) limit.name = p.name;
    if (p.replaces !== undefined && p.replaces.length > 0)
      limit.replaces = p.replaces.map((r) => ({ name: r.name ?? '' }));
    out.rate_limit = limit;
  }
  if (d.shadowMode) out.shadow_mode = true;
  if (d.detailedMetric) out.detailed_metric = true;
  if (d.quotaMode) out.quota_mode = true;
  if (d.metadata !== undefined) out.metadata = d.metadata;
  if (d.descriptors !== undefined && d.descriptors.length > 0) out.descriptors = d.descriptors.map(descriptor);
  return out;
}

/**
 * One resource as a rule source: the JSON form of the YAML envoy would convert it to (JSON is YAML), named
 * `xds:<resource name>` in problems.
 */
export function ruleSourceOf(config: RateLimitConfigMessage, index: number): RuleSource {
  const doc: Record<string, unknown> = { domain: config.domain ?? '' };
  if (config.descriptors !== undefined && config.descriptors.length > 0) {
    doc.descriptors = config.descriptors.map(descriptor);
  }
  return { file: `xds:${config.name || `resource-${index}`}`, text: JSON.stringify(doc, null, 1) };
}
