/**
 * Runs the real `sluice serve` the way envoyproxy/ratelimit is run — its environment variables, a
 * RUNTIME_ROOT directory of config files — and talks to it with a gRPC client built from the shipped
 * protos. No Envoy binary can be installed on these machines, so this suite is what stands in for one:
 * every case is one of envoy ratelimit's own test cases, reproduced against sluice.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRlsClient, type RlsClient, type RlsResponse } from '../../src/index.js';
import { type SluiceProcess, startSluice, unique } from '../integration/helpers.js';

/** The fixture directory of this suite. */
export const FIXTURES = join(import.meta.dirname, 'fixtures');

/** A RUNTIME_ROOT tree: `<root>/ratelimit/config/*.yaml`, as envoy ratelimit's deployments lay it out. */
export interface Runtime {
  readonly root: string;
  readonly configDir: string;
  /** envoy's variables pointing at this tree. */
  readonly env: Record<string, string>;
  write(name: string, text: string): void;
  remove(name: string): void;
  dispose(): void;
}

/** A runtime tree holding `files` (name → YAML text) and the files of `fixtureDirs`. */
export function createRuntime(files: Record<string, string> = {}, fixtureDirs: string[] = []): Runtime {
  const base = mkdtempSync(join(tmpdir(), 'sluice-envoy-'));
  const root = join(base, 'current');
  const configDir = join(root, 'ratelimit', 'config');
  mkdirSync(configDir, { recursive: true });
  for (const dir of fixtureDirs) {
    for (const name of readdirSync(dir)) copyFileSync(join(dir, name), join(configDir, name));
  }
  for (const [name, text] of Object.entries(files)) writeFileSync(join(configDir, name), text);
  return {
    root,
    configDir,
    env: { RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: 'ratelimit', RUNTIME_WATCH_ROOT: 'false' },
    write: (name, text) => writeFileSync(join(configDir, name), text),
    remove: (name) => rmSync(join(configDir, name), { force: true }),
    dispose: () => rmSync(base, { recursive: true, force: true }),
  };
}

/** A running service in envoy mode and a client of it. */
export interface EnvoyService {
  readonly sluice: SluiceProcess;
  readonly client: RlsClient;
  /** ShouldRateLimit with `[key, value]` entry lists, one list per descriptor. */
  ask(domain: string, descriptors: [string, string][][], extra?: Record<string, unknown>): Promise<RlsResponse>;
  stop(): Promise<number | null>;
}

/**
 * Starts `sluice serve --envoy-compat` on loopback ports with `env` (envoy's variables). Flags give the
 * ports (0: any free one) and the log level the harness reads; everything else comes from `env`.
 */
export async function startEnvoy(
  env: Record<string, string>,
  args: string[] = ['--envoy-compat'],
): Promise<EnvoyService> {
  const sluice = await startSluice([...args, '--log-level', 'info'], env);
  const client = createRlsClient(`127.0.0.1:${sluice.grpc}`);
  return {
    sluice,
    client,
    ask: (domain, descriptors, extra = {}) =>
      client.shouldRateLimit(
        {
          domain,
          descriptors: descriptors.map((entries) => ({ entries: entries.map(([key, value]) => ({ key, value })) })),
          ...extra,
        },
        5000,
      ),
    async stop() {
      client.close();
      return (await sluice.stop()).code;
    },
  };
}

/** A status as envoy's tests compare it. */
export interface Shaped {
  overallCode: string | undefined;
  statuses: {
    code: string | undefined;
    currentLimit: { requestsPerUnit: number; unit: string | undefined } | null;
    limitRemaining: number;
  }[];
}

/** A response as envoy's tests compare it: code, limit, remaining (duration checked apart). */
export function shape(response: RlsResponse): Shaped {
  return {
    overallCode: response.overallCode,
    statuses: (response.statuses ?? []).map((s) => ({
      code: s.code,
      currentLimit: s.currentLimit
        ? { requestsPerUnit: s.currentLimit.requestsPerUnit ?? 0, unit: s.currentLimit.unit }
        : null,
      limitRemaining: s.limitRemaining ?? 0,
    })),
  };
}

/** The status envoy's tests build with `newDescriptorStatus(code, rpu, unit, remaining)`. */
export function status(code: string, requestsPerUnit: number, unit: string, limitRemaining: number) {
  return { code, currentLimit: { requestsPerUnit, unit }, limitRemaining };
}

/** A status with no limit (unknown domain, no matching rule). */
export const NO_LIMIT = { code: 'OK', currentLimit: null, limitRemaining: 0 };

/** `duration_until_reset` in ms. */
export function resetMs(response: RlsResponse, index = 0): number {
  const d = response.statuses?.[index]?.durationUntilReset;
  return Number(d?.seconds ?? 0) * 1000 + Number(d?.nanos ?? 0) / 1e6;
}

/** The response headers as a plain object (names as sent). */
export function headersOf(response: RlsResponse): Record<string, string> {
  return Object.fromEntries((response.responseHeadersToAdd ?? []).map((h) => [h.key, h.value]));
}

/**
 * Runs `steps` (a sequence against one fresh key); if a window boundary passed during it (a reset that
 * grew, or a count that started afresh and so failed a step's assertion), runs it again with another
 * key — the test never depends on how fast it runs. A real mismatch fails all three attempts.
 */
export async function withinOneWindow(steps: (key: string) => Promise<number[]>): Promise<void> {
  let failure: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const resets = await steps(unique('w'));
      if (resets.every((r, i) => i === 0 || r <= (resets[i - 1] as number))) return;
      failure = undefined;
    } catch (error) {
      if (!(error instanceof assert.AssertionError)) throw error;
      failure = error;
    }
  }
  if (failure !== undefined) throw failure;
  assert.fail('three window boundaries in a row');
}

/**
 * envoy's testBasicBaseConfig: 25 requests on one `key2` value against 20 per minute — OK down to 0,
 * then OVER_LIMIT. Returns the resets, for {@link withinOneWindow}.
 */
export async function overMinuteLimit(svc: EnvoyService, key: string): Promise<number[]> {
  const resets: number[] = [];
  for (let i = 0; i < 25; i++) {
    const res = await svc.ask('another', [[['key2', key]]]);
    const over = i >= 20;
    assert.deepEqual(shape(res), {
      overallCode: over ? 'OVER_LIMIT' : 'OK',
      statuses: [status(over ? 'OVER_LIMIT' : 'OK', 20, 'MINUTE', over ? 0 : 20 - (i + 1))],
    });
    resets.push(resetMs(res));
  }
  return resets;
}

/**
 * envoy's testBasicBaseConfig: 15 requests with two descriptors (key2: 20/minute, key3: 10/hour). Once
 * key3 is over, key2 stays at 10: envoy with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true, and sluice
 * always (a rejected request consumes nothing: a deliberate difference).
 */
export async function overHourLimitOfTwo(svc: EnvoyService, key: string): Promise<number[]> {
  const resets: number[] = [];
  for (let i = 0; i < 15; i++) {
    const res = await svc.ask('another', [[['key2', key]], [['key3', key]]]);
    const over = i >= 10;
    assert.deepEqual(shape(res), {
      overallCode: over ? 'OVER_LIMIT' : 'OK',
      statuses: [
        status('OK', 20, 'MINUTE', over ? 10 : 20 - (i + 1)),
        status(over ? 'OVER_LIMIT' : 'OK', 10, 'HOUR', over ? 0 : 10 - (i + 1)),
      ],
    });
    resets.push(resetMs(res));
  }
  return resets;
}
