/**
 * The overload benchmark's closed-loop load: a fixed population of callers, each sending its next request
 * when the last one is answered, as users and upstream services do (a shed caller waits a short backoff).
 */
import { Agent } from 'node:http';
import { type Sample, send } from './overload-load.js';

/** A closed-loop load: `callers` callers on `url` for `durationMs`, a share `criticalShare` of them critical. */
export interface Callers {
  url: string;
  callers: number;
  durationMs: number;
  criticalShare: number;
  /** The client's patience per request. */
  timeoutMs: number;
  /** How long a caller waits after a refusal (503) or a failure before it asks again. */
  backoffMs: number;
}

/**
 * Runs the callers until `durationMs` has passed (none starts a request after it) and answers every
 * request's sample. Caller `c` is critical when `c` is a multiple of 1 / criticalShare (20 %: 0, 5, 10, …).
 */
export async function runCallers(load: Callers): Promise<Sample[]> {
  const { url, callers, durationMs, criticalShare, timeoutMs, backoffMs } = load;
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const samples: Sample[] = [];
  const start = performance.now();
  const every = Math.round(1 / criticalShare);
  const caller = async (c: number) => {
    const critical = c % every === 0;
    const headers: Record<string, string> = critical ? { 'x-priority': 'critical' } : {};
    // Spread the first requests over one backoff, not all in the same tick.
    await new Promise((r) => setTimeout(r, (c / callers) * backoffMs));
    for (let atMs = performance.now() - start; atMs < durationMs; atMs = performance.now() - start) {
      const r = await send(url, headers, timeoutMs, agent);
      samples.push({ atMs, critical, ...r });
      if (r.status !== 200) await new Promise((resolve) => setTimeout(resolve, backoffMs));
    }
  };
  await Promise.all(Array.from({ length: callers }, (_, c) => caller(c)));
  agent.destroy();
  return samples;
}
