/**
 * Per-policy Lua scripts for the Redis store: a policy's numbers written into the script's source, so a lone check
 * sends its key and almost nothing else.
 */
import type { ResolvedPolicy } from '../../core/policy.js';
import { policyScript, type Script } from './scripts.js';

/**
 * At most this many policies get a script of their own per store: a script stays in Redis's cache
 * until Redis restarts, and policies made per request must not fill it. The others use their
 * algorithm's script, which takes the policy as arguments.
 */
export const MAX_POLICY_SCRIPTS = 64;
/** After a load failed (Redis unreachable), new loads wait this long: no SCRIPT LOAD storm in an outage. */
const RETRY_MS = 1000;

/**
 * Which policies have a script of their own in Redis, per store. A lone check with its algorithm's
 * script sends the policy as 4–5 more arguments, which Redis reads into Lua and the script parses:
 * about 10,000 of the 55,000–90,000 instructions such a call costs Redis. With the policy written into
 * the source (policyScript in scripts.ts) a lone check is `EVALSHA sha 1 key '' 0 0 1`. A policy's
 * script is loaded the first time the policy is checked and used once Redis has it; until then the
 * algorithm's script decides, exactly the same way.
 */
export class PolicyScripts {
  /** The script of each policy object seen; null when it gets none (past the cap). */
  private readonly byPolicy = new WeakMap<ResolvedPolicy, Script | null>();
  /** Loaded (true) or loading (false), by SHA: equal policies share one script. */
  private readonly status = new Map<string, boolean>();
  private quietUntil = 0;

  constructor(private readonly load: (script: Script) => Promise<unknown>) {}

  /** The policy's own script once Redis has it, else undefined (and its load is started). */
  get(policy: ResolvedPolicy): Script | undefined {
    let script = this.byPolicy.get(policy);
    if (script === undefined) {
      script = this.status.size < MAX_POLICY_SCRIPTS ? policyScript(policy) : null;
      this.byPolicy.set(policy, script);
    }
    if (script === null) return undefined;
    const loaded = this.status.get(script.sha);
    if (loaded === true) return script;
    if (loaded === undefined) this.start(script);
    return undefined;
  }

  private start(script: Script): void {
    if (this.status.size >= MAX_POLICY_SCRIPTS || Date.now() < this.quietUntil) return;
    this.status.set(script.sha, false);
    this.load(script).then(
      () => this.status.set(script.sha, true),
      () => {
        this.status.delete(script.sha);
        this.quietUntil = Date.now() + RETRY_MS;
      },
    );
  }
}
