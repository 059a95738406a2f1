/** envoy ratelimit's setting values parsed as its Go code parses them (strconv, time.ParseDuration, envconfig maps, listen addresses). */
import { SluiceError } from 'sluice';

export type Env = Readonly<Record<string, string | undefined>>;

export function bad(name: string, why: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_OPTION', `${name}: ${why}`, { option: name });
}

/** Go's strconv.ParseBool. */
export function goBool(env: Env, name: string, fallback: boolean): boolean {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  throw bad(name, `'${v}' is not a boolean (use true or false)`);
}

export function goInt(env: Env, name: string, fallback: number, max = 2 ** 31 - 1): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  if (!/^\d{1,10}$/.test(v) || Number(v) > max) throw bad(name, `'${v}' is not a whole number from 0 to ${max}`);
  return Number(v);
}

/** Go's strconv.ParseFloat, for a ratio: a non-negative decimal number (`0.8`, `.5`, `1e-1`). */
export function goFloat(env: Env, name: string, fallback: number): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = /^\+?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(v) ? Number(v) : Number.NaN;
  if (!Number.isFinite(n)) throw bad(name, `'${v}' is not a non-negative number (e.g. 0.8)`);
  return n;
}

const GO_UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration (`"1h30m"`, `"150us"`, `"0"`), in whole milliseconds (rounded up). */
export function goDuration(env: Env, name: string, fallbackMs: number): number {
  const v = env[name];
  if (v === undefined || v === '') return fallbackMs;
  if (v === '0') return 0;
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let ms = 0;
  let at = 0;
  for (let m = part.exec(v); m !== null; m = part.exec(v)) {
    ms += Number(m[1]) * (GO_UNITS[m[2] as string] as number);
    at = part.lastIndex;
  }
  if (at !== v.length || at === 0 || !Number.isFinite(ms)) {
    throw bad(name, `'${v}' is not a duration (e.g. 10s, 1m30s, 24h)`);
  }
  return Math.ceil(ms);
}

/** `"k1:v1,k2:v2"` (envconfig's map form). */
export function goMap(env: Env, name: string): Record<string, string> {
  const v = env[name];
  const out: Record<string, string> = {};
  if (v === undefined || v === '') return out;
  for (const pair of v.split(',')) {
    const at = pair.indexOf(':');
    if (at <= 0) throw bad(name, `'${pair}' is not key:value`);
    out[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return out;
}

export function port(env: Env, name: string, fallback: number): number {
  return goInt(env, name, fallback, 65535);
}

/** `host:port` or `:port` (Go's listen address form). */
export function listenAddress(env: Env, name: string, fallback: string): { host: string; port: number } {
  const v = env[name] || fallback;
  const m = /^(.*):(\d{1,5})$/.exec(v);
  if (m === null || Number(m[2]) > 65535) throw bad(name, `'${v}' is not [host]:port`);
  const host = (m[1] as string).replace(/^\[|\]$/g, '');
  return { host: host === '' ? '0.0.0.0' : host, port: Number(m[2]) };
}
