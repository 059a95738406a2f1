/**
 * The Redis store's script calls: checks queued per script (and per slot on a Cluster, per time with the client
 * clock), sent together as one EVALSHA, and each reply handed back to the checks it answers.
 */
import type { SluiceError } from '../../core/errors.js';
import { Batcher, type Job } from './batcher.js';
import type { RedisTransport } from './client.js';
import { compactWidth, DECISION_WIDTH } from './decode.js';
import { slotOf } from './keys.js';
import { PolicyScripts } from './policy-scripts.js';
import type { Runner } from './runner.js';
import { type ScriptItem, scriptCall } from './script-args.js';
import { MANY_SCRIPT, type Script } from './scripts.js';

/**
 * With the client clock, TTLs get this much extra so that state never expires in Redis before the
 * callers' clocks say it may: application servers disagree a little, and a test's manual clock may
 * stand still while real time passes. State past its expiry equals a fresh one, so longer is safe.
 */
const CLIENT_CLOCK_GRACE_MS = '60000';

/** How the store sends scripts: the batcher, each script call's queue, and the clock arguments every script takes. */
export interface ScriptCalls {
  readonly batcher: Batcher;
  /** The queue a call joins: calls in one queue go out as one script call. */
  queueKey(script: Script, key: string, nowMs: number): string;
  /** The time argument: '' with Redis's clock (the script reads TIME), the caller's ms otherwise. */
  nowArg(nowMs: number): string;
  /** Extra TTL for the client clock (see CLIENT_CLOCK_GRACE_MS); '0' with Redis's clock. */
  readonly grace: string;
}

/** The batched script calls of one store over `runner`. */
export function createScriptCalls(
  runner: Runner,
  transport: RedisTransport,
  serverClock: boolean,
  batching: boolean,
): ScriptCalls {
  const grace = serverClock ? '0' : CLIENT_CLOCK_GRACE_MS;
  const nowArg = (nowMs: number) => (serverClock ? '' : String(nowMs));
  /** Script calls sent and not answered yet. */
  let inFlight = 0;
  const batcher = new Batcher(sendJobs, batching, () => inFlight === 0);
  const policyScripts = new PolicyScripts((script) => runner.readiness.addScript(script));

  function queueKey(script: Script, key: string, nowMs: number): string {
    let queue = script.name;
    if (transport.cluster) queue += `@${slotOf(key)}`;
    if (!serverClock) queue += `#${nowMs}`;
    return queue;
  }

  function sendJobs(jobs: readonly Job[]): void {
    const first = jobs[0] as Job;
    const batch = first.script !== MANY_SCRIPT;
    // A batch goes to the script of its first item's policy once Redis has it (policy-scripts.ts).
    const policy = (first.items[0] as ScriptItem).policy;
    const own = batch ? policyScripts.get(policy) : undefined;
    const script = own ?? first.script;
    const argv = scriptCall(
      script,
      [nowArg(first.nowMs), grace],
      jobs.length === 1 ? first.items : jobs.flatMap((j) => j.items),
      batch,
      own === undefined ? undefined : policy,
    );
    inFlight++;
    runner.callThen(script, argv, (error, reply) => {
      inFlight--;
      if (error !== undefined) {
        for (const job of jobs) job.fail(error);
        return;
      }
      // A batch script's lone packed decision is the whole reply (lua.ts, PACKED_RESET_LIMIT).
      const r = typeof reply === 'number' ? [reply] : (reply as unknown[]);
      // Where the decisions of the job starting at `at` end: a batch script's take 1 or 6 integers each.
      const after = (job: Job, at: number) => {
        if (!batch) return at + job.width * DECISION_WIDTH;
        for (let k = 0; k < job.width; k++) at += compactWidth(r, at);
        return at;
      };
      let end = 0;
      for (const job of jobs) end = after(job, end);
      // Items Redis could not decide (it refused their write) share one error, reported once per call.
      let refusal: SluiceError | undefined;
      const refused = () => {
        runner.stats.refused++;
        refusal ??= runner.refused(String(r[end] ?? 'write refused'));
        return refusal;
      };
      let offset = 0;
      for (const job of jobs) {
        job.settle(r, offset, refused);
        offset = after(job, offset);
      }
    });
  }

  return { batcher, queueKey, nowArg, grace };
}
