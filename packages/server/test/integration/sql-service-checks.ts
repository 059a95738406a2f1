/**
 * What the `sluice serve --store mysql://…|sqlite:…` tests ask a running service: bursts of concurrent decisions over
 * HTTP `/v1/check` and Envoy gRPC, and its `/healthcheck` report.
 */
import { join } from 'node:path';
import { createRlsClient } from '../../src/index.js';
import { postJson, ROOT, type SluiceProcess } from './helpers.js';

/** The rules the gRPC checks use (`per_day`: 20 a day, so no window ends inside a test). */
export const ENVOY_RULES = join(ROOT, 'test', 'integration', 'fixtures', 'envoy.yaml');

/** One `/v1/check` result. */
export interface CheckResult {
  allowed: boolean;
  degraded?: boolean;
}

/** `n` concurrent `/v1/check` requests on `key` (10 an hour); each one's result (undefined: no result, e.g. a 503). */
export async function httpBurst(service: SluiceProcess, key: string, n: number): Promise<(CheckResult | undefined)[]> {
  const url = `http://127.0.0.1:${service.http}/v1/check`;
  const answers = await Promise.all(
    Array.from({ length: n }, () => postJson(url, { checks: [{ key, limit: 10, period: '1h' }] })),
  );
  return answers.map((a) => (a.json as { results?: CheckResult[] } | undefined)?.results?.[0]);
}

/** `n` concurrent Envoy ShouldRateLimit calls on the `per_day` descriptor `value`; each one's overall code or error. */
export async function grpcBurst(service: SluiceProcess, value: string, n: number): Promise<string[]> {
  const client = createRlsClient(`127.0.0.1:${service.grpc}`);
  try {
    const answers = await Promise.allSettled(
      Array.from({ length: n }, () =>
        client.shouldRateLimit({ domain: 'it', descriptors: [{ entries: [{ key: 'per_day', value }] }] }, 10_000),
      ),
    );
    return answers.map((a) => (a.status === 'fulfilled' ? String(a.value.overallCode) : `error: ${a.reason}`));
  } finally {
    client.close();
  }
}

/** `GET /healthcheck`: its status code and report. */
export async function health(service: SluiceProcess) {
  const res = await fetch(`http://127.0.0.1:${service.http}/healthcheck`);
  const body = (await res.json()) as { status: string; store: string; storeReachable: boolean };
  return { code: res.status, ...body };
}

/** Asks `/healthcheck` until `done` holds (its answer is cached for 500 ms), at most `tries` times. */
export async function healthUntil(
  service: SluiceProcess,
  done: (report: Awaited<ReturnType<typeof health>>) => boolean,
  tries = 40,
) {
  let report = await health(service);
  for (let i = 0; i < tries && !done(report); i++) {
    await new Promise((r) => setTimeout(r, 100));
    report = await health(service);
  }
  return report;
}

/** How many of `codes` are `code`. */
export const countOf = (codes: readonly string[], code: string) => codes.filter((c) => c === code).length;

/**
 * Runs `burst` until every answer in it came from the store (`answered`), at most `tries` times, and returns the last
 * run: on a loaded machine a decision can take longer than the service's 500 ms store timeout, and a burst with
 * such an answer in it says nothing about exactness.
 */
export async function storeAnswered<T>(burst: () => Promise<T[]>, answered: (answer: T) => boolean, tries = 5) {
  let answers = await burst();
  for (let i = 1; i < tries && !answers.every(answered); i++) answers = await burst();
  return answers;
}
