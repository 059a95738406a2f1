/**
 * Access logs as replay input: nginx's `combined` format, Envoy's default access log format and JSON lines,
 * each line's fields mapped to descriptor entries (`--map field=descriptor_key`), the time from the line,
 * and the live outcome from the status (429: rejected).
 */
import { type CaptureEntry, type CaptureRecord, isCaptureTime } from './capture-record.js';

/** The formats `sluice replay --format` reads. */
export const ACCESS_LOG_FORMATS = ['nginx', 'envoy', 'json'] as const;
export type AccessLogFormat = (typeof ACCESS_LOG_FORMATS)[number];

/** One descriptor built from log fields: its entries, each a log field and the descriptor key it becomes. */
export type DescriptorMapping = readonly { readonly field: string; readonly key: string }[];

// $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"
const NGINX =
  /^(\S+) \S+ (\S+) \[([^\]]+)\] "(\S+) (\S+) ?([^"]*)" (\d{3}) (\S+)(?: "((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)")?/;
const NGINX_FIELDS = [
  'remote_addr',
  'remote_user',
  'time',
  'method',
  'path',
  'protocol',
  'status',
  'bytes_sent',
  'referer',
  'user_agent',
];

// [%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS%
// %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%"
// "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"
const ENVOY =
  /^\[([^\]]+)\] "(\S+) (\S+) ?([^"]*)" (\d{3}) (\S+) (\S+) (\S+) (\S+) (\S+) "([^"]*)" "([^"]*)" "([^"]*)" "([^"]*)" "([^"]*)"/;
const ENVOY_FIELDS = [
  'time',
  'method',
  'path',
  'protocol',
  'status',
  'response_flags',
  'bytes_received',
  'bytes_sent',
  'duration',
  'upstream_service_time',
  'x_forwarded_for',
  'user_agent',
  'request_id',
  'authority',
  'upstream_host',
];

const MONTHS: Readonly<Record<string, string>> = {
  Jan: '01',
  Feb: '02',
  Mar: '03',
  Apr: '04',
  May: '05',
  Jun: '06',
  Jul: '07',
  Aug: '08',
  Sep: '09',
  Oct: '10',
  Nov: '11',
  Dec: '12',
};

/** nginx's `10/Oct/2000:13:55:36 -0700` → ms since the epoch. */
function nginxTime(text: string): number {
  const m = /^(\d{2})\/(\w{3})\/(\d{4}):(\d{2}:\d{2}:\d{2}) ([+-]\d{2})(\d{2})$/.exec(text);
  const month = m === null ? undefined : MONTHS[m[2] as string];
  if (m === null || month === undefined) return Number.NaN;
  return Date.parse(`${m[3]}-${month}-${m[1]}T${m[4]}${m[5]}:${m[6]}`);
}

/** A JSON line's time: ms (a number over 1e11), seconds (a smaller number) or an ISO string. */
function jsonTime(value: unknown): number {
  if (typeof value === 'number') return value > 1e11 ? value : value * 1000;
  return typeof value === 'string' ? Date.parse(value) : Number.NaN;
}

const JSON_TIME_FIELDS = ['time', 'timestamp', '@timestamp', 'ts', 'start_time'];

function fieldsOf(line: string, format: AccessLogFormat): Record<string, unknown> | string {
  if (format === 'json') {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return 'not JSON';
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'expected a JSON object';
    const fields = value as Record<string, unknown>;
    const timeField = JSON_TIME_FIELDS.find((f) => fields[f] !== undefined);
    return { ...fields, t: timeField === undefined ? Number.NaN : jsonTime(fields[timeField]) };
  }
  const m = (format === 'nginx' ? NGINX : ENVOY).exec(line);
  if (m === null) return `not an ${format} access log line`;
  const names = format === 'nginx' ? NGINX_FIELDS : ENVOY_FIELDS;
  const fields: Record<string, unknown> = {};
  names.forEach((name, i) => {
    if (m[i + 1] !== undefined) fields[name] = m[i + 1];
  });
  fields.t = format === 'nginx' ? nginxTime(String(fields.time)) : Date.parse(String(fields.time));
  return fields;
}

/**
 * One access-log line as a capture record of `domain`: a descriptor per mapping, or a message saying what is
 * wrong with the line (not of the format, no time, a mapped field missing).
 */
export function parseAccessLine(
  line: string,
  format: AccessLogFormat,
  domain: string,
  mappings: readonly DescriptorMapping[],
): CaptureRecord | string {
  const fields = fieldsOf(line, format);
  if (typeof fields === 'string') return fields;
  const t = fields.t;
  // A time past what a Date holds (or before 1970) cannot be reported as one: a bad line, not a crash later.
  if (!isCaptureTime(t)) return 'no time it can read';
  const descriptors: { entries: CaptureEntry[] }[] = [];
  for (const mapping of mappings) {
    const entries: CaptureEntry[] = [];
    for (const { field, key } of mapping) {
      const value = fields[field];
      if (value === undefined || value === null || value === '' || value === '-') return `no "${field}"`;
      entries.push({ key, value: typeof value === 'string' ? value : JSON.stringify(value) });
    }
    descriptors.push({ entries });
  }
  const status = Number(fields.status ?? fields.status_code ?? fields.response_code);
  return { t, domain, descriptors, cost: 1, outcome: status === 429 ? 'OVER_LIMIT' : 'OK' };
}

/** `field=key[,field=key...]` → one descriptor's mapping (a message when malformed). */
export function parseMapping(text: string): DescriptorMapping | string {
  const mapping: { field: string; key: string }[] = [];
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    const field = part.slice(0, eq).trim();
    const key = part.slice(eq + 1).trim();
    if (eq <= 0 || field === '' || key === '' || field.length > 200 || key.length > 200) {
      return `--map: '${text.slice(0, 60)}' is not field=descriptor_key[,field=descriptor_key...]`;
    }
    mapping.push({ field, key });
  }
  return mapping;
}
