/**
 * Raw HTTP/2 client frames (RFC 9113) for tests that must send what no well-behaved client library would:
 * a request cut at any byte, a stream reset mid-message, a connection dropped between frames. Headers are
 * HPACK literals without indexing (RFC 7541 §6.2.2), which every decoder accepts.
 */

/** The client connection preface and an empty SETTINGS frame. */
export function preface(): Buffer {
  return Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))]);
}

export const FRAME = {
  DATA: 0x0,
  HEADERS: 0x1,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
} as const;

export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;

/** One frame: 9-byte header, then the payload. */
export function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK integer with an `n`-bit prefix (RFC 7541 §5.1). */
function hpackInt(value: number, prefixBits: number, firstByte = 0): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([firstByte | value]);
  const out = [firstByte | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}

function hpackString(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  return Buffer.concat([hpackInt(bytes.length, 7), bytes]);
}

/** A HEADERS frame with END_HEADERS (and END_STREAM when asked). */
export function headers(streamId: number, fields: readonly [string, string][], endStream = false): Buffer {
  const block = Buffer.concat(
    fields.flatMap(([name, value]) => [Buffer.from([0]), hpackString(name), hpackString(value)]),
  );
  return frame(FRAME.HEADERS, FLAG.END_HEADERS | (endStream ? FLAG.END_STREAM : 0), streamId, block);
}

/** The request headers of a gRPC call to `path`. */
export function grpcRequestHeaders(streamId: number, path: string, extra: readonly [string, string][] = []): Buffer {
  return headers(streamId, [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', path],
    [':authority', 'localhost'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ...extra,
  ]);
}

export function data(streamId: number, payload: Buffer, endStream = false): Buffer {
  return frame(FRAME.DATA, endStream ? FLAG.END_STREAM : 0, streamId, payload);
}

export function rstStream(streamId: number, code = 0x8 /* CANCEL */): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(code);
  return frame(FRAME.RST_STREAM, 0, streamId, payload);
}

export function goaway(lastStreamId: number, code = 0): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(lastStreamId & 0x7fffffff, 0);
  payload.writeUInt32BE(code, 4);
  return frame(FRAME.GOAWAY, 0, 0, payload);
}

export function windowUpdate(streamId: number, increment: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(increment & 0x7fffffff);
  return frame(FRAME.WINDOW_UPDATE, 0, streamId, payload);
}

/** A gRPC length-prefixed message header declaring `length` bytes (uncompressed). */
export function messagePrefix(length: number): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(length, 1);
  return prefix;
}
