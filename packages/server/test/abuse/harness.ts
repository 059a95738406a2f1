/**
 * What every abuse test asserts about the real `sluice serve` under attack (issue 12): the process stays
 * alive, another client's probe is answered within 1 s during and after the attack, peak RSS stays under
 * a stated bound, and `/metrics` stays under a stated size. The attack itself asserts its own error codes.
 * An attack on cost alone (work per request, not a stall) compares the service's CPU time with a harmless
 * request's in the same run instead ({@link cpuSpent}): wall-clock time on a busy machine is too coarse.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { SluiceProcess } from '../integration/helpers.js';
import type { ProbeResult } from './probe.js';

/** The bounds every attack must stay within (per test, stated next to the attack). */
export interface AbuseBounds {
  /** Peak resident memory of the service process (VmHWM), bytes. */
  maxRssBytes: number;
  /** Size of one `GET /metrics` answer after the attack, bytes. */
  maxMetricsBytes: number;
}

/**
 * The bound for a probe answer while an attack runs. When even an unattacked probe takes over
 * 100 ms (a machine busy with other work), its time is added, so the bound measures the attack.
 */
export const PROBE_DEADLINE_MS = 1000;

export const MB = 1024 * 1024;

/** The peak and current resident memory of a process, from /proc (Linux). */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux Node supports). */
const TICKS_PER_SECOND = 100;

/** The CPU time (user + system) a process has used so far, ms, from /proc (Linux); 10 ms steps. */
export function cpuTimeMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (in parentheses, which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** Runs `work`, returning its result and the CPU time process `pid` spent meanwhile, ms. */
export async function cpuSpent<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const before = cpuTimeMs(pid);
  const result = await work();
  return { result, ms: cpuTimeMs(pid) - before };
}

/**
 * Runs `attack` while `probe` asks the service every 100 ms, then probes once more after it; asserts the
 * process is alive, every probe succeeded within {@link PROBE_DEADLINE_MS}, and the bounds held.
 * Returns the attack's result for its own assertions.
 */
export async function underAttack<T>(
  sluice: SluiceProcess,
  probe: () => Promise<ProbeResult>,
  ok: number | string,
  bounds: AbuseBounds,
  attack: () => Promise<T>,
): Promise<T> {
  // On a machine so loaded that an unattacked probe already takes a while, that time is added to the bound.
  let unattacked = 0;
  for (let i = 0; i < 3; i++) unattacked = Math.max(unattacked, (await probe()).ms);
  const deadline = PROBE_DEADLINE_MS + (unattacked > 100 ? unattacked : 0);
  const probes: ProbeResult[] = [];
  let attacking = true;
  const prober = (async () => {
    while (attacking) {
      probes.push(await probe());
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  let result: T;
  try {
    result = await attack();
  } finally {
    attacking = false;
    await prober;
  }
  probes.push(await probe());
  assert.equal(sluice.child.exitCode, null, `sluice exited during the attack:\n${sluice.stderr()}`);
  for (const [i, p] of probes.entries()) {
    assert.equal(p.status, ok, `probe ${i + 1} of ${probes.length} answered ${p.status}`);
    assert.ok(
      p.ms < deadline,
      `probe ${i + 1} of ${probes.length} took ${Math.round(p.ms)} ms (bound ${Math.round(deadline)} ms)`,
    );
  }
  const { peak } = memoryOf(sluice.pid);
  assert.ok(peak < bounds.maxRssBytes, `peak RSS ${Math.round(peak / MB)} MB over ${bounds.maxRssBytes / MB} MB`);
  const metrics = await fetch(`http://127.0.0.1:${sluice.http}/metrics`).then((r) => r.text());
  assert.ok(
    Buffer.byteLength(metrics) < bounds.maxMetricsBytes,
    `/metrics is ${Buffer.byteLength(metrics)} bytes, over ${bounds.maxMetricsBytes}`,
  );
  return result;
}
