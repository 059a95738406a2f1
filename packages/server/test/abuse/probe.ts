/**
 * The "another client" of the abuse tests: a well-behaved caller that must keep getting answers while an
 * attack runs. Each probe is one complete call on a fresh connection; it reports how long the answer took.
 */
import { connect } from 'node:http2';
import { encodeRateLimitRequestFrame } from '../../src/rls/wire.js';

const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

/** The probe's answer: status, and milliseconds from sending to the answer. */
export interface ProbeResult {
  status: number | string;
  ms: number;
}

/** Gives up on a probe after this long: an attack that stalls the service shows as a probe over 1 s, not a hang. */
const GIVE_UP_MS = 15_000;

/** One gRPC ShouldRateLimit call; `status` is the grpc-status (0 = OK) or 'timeout' / 'error'. */
export function probeGrpc(port: number, domain = 'probe'): Promise<ProbeResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const session = connect(`http://127.0.0.1:${port}`);
    let settled = false;
    const done = (status: number | string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      session.destroy();
      resolve({ status, ms: performance.now() - started });
    };
    const timer = setTimeout(() => done('timeout'), GIVE_UP_MS);
    session.on('error', () => done('error'));
    const stream = session.request({
      ':method': 'POST',
      ':path': PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let status: string | undefined;
    stream.on('response', (h) => {
      if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
    });
    stream.on('trailers', (t) => {
      if (t['grpc-status'] !== undefined) status = String(t['grpc-status']);
    });
    stream.on('data', () => {});
    stream.on('error', () => done('error'));
    stream.on('close', () => done(status === undefined ? 'error' : Number(status)));
    stream.end(encodeRateLimitRequestFrame({ domain, descriptors: [{ entries: [{ key: 'probe', value: 'p' }] }] }));
  });
}

/** One `POST /json` call; `status` is the HTTP status or 'timeout' / 'error'. */
export async function probeHttp(port: number, domain = 'probe'): Promise<ProbeResult> {
  const started = performance.now();
  try {
    const res = await fetch(`http://127.0.0.1:${port}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ domain, descriptors: [{ entries: [{ key: 'probe', value: 'p' }] }] }),
      signal: AbortSignal.timeout(GIVE_UP_MS),
    });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  } catch (error) {
    return { status: (error as Error).name === 'TimeoutError' ? 'timeout' : 'error', ms: performance.now() - started };
  }
}
