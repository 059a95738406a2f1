/**
 * `google.protobuf.Struct` from plain JSON-like data, for a response's `dynamic_metadata`: as protobuf
 * bytes (the h2 server's hand-written codec) and as the message object @grpc/proto-loader encodes.
 * Field numbers from struct.proto: Struct.fields = 1 (map<string, Value>); Value: null_value = 1,
 * number_value = 2, string_value = 3, bool_value = 4, struct_value = 5, list_value = 6; ListValue.values = 1.
 */

function tag(field: number, wire: number): Buffer {
  return varint((field << 3) | wire);
}

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

function bytes(field: number, body: Buffer): Buffer {
  return Buffer.concat([tag(field, 2), varint(body.length), body]);
}

function value(v: unknown): Buffer {
  if (v === null || v === undefined) return Buffer.concat([tag(1, 0), varint(0)]);
  if (typeof v === 'number') {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    return Buffer.concat([tag(2, 1), b]);
  }
  if (typeof v === 'string') return bytes(3, Buffer.from(v, 'utf8'));
  if (typeof v === 'boolean') return Buffer.concat([tag(4, 0), varint(v ? 1 : 0)]);
  if (Array.isArray(v)) return bytes(6, Buffer.concat(v.map((item) => bytes(1, value(item)))));
  if (typeof v === 'object') return bytes(5, encodeStruct(v as Record<string, unknown>));
  return bytes(3, Buffer.from(String(v), 'utf8'));
}

/** A Struct's bytes (no tag or length of its own). */
export function encodeStruct(data: Readonly<Record<string, unknown>>): Buffer {
  return Buffer.concat(
    Object.entries(data).map(([k, v]) =>
      bytes(1, Buffer.concat([bytes(1, Buffer.from(k, 'utf8')), bytes(2, value(v))])),
    ),
  );
}

type ValueMessage =
  | { nullValue: 'NULL_VALUE' }
  | { numberValue: number }
  | { stringValue: string }
  | { boolValue: boolean }
  | { structValue: StructMessage }
  | { listValue: { values: ValueMessage[] } };

/** A Struct as proto-loader encodes it. */
export interface StructMessage {
  fields: Record<string, ValueMessage>;
}

function valueMessage(v: unknown): ValueMessage {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(valueMessage) } };
  if (typeof v === 'object') return { structValue: structMessage(v as Record<string, unknown>) };
  return { stringValue: String(v) };
}

/** A Struct message object for @grpc/proto-loader. */
export function structMessage(data: Readonly<Record<string, unknown>>): StructMessage {
  return { fields: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, valueMessage(v)])) };
}
