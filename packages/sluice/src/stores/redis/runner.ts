/**
 * How the Redis store talks to Redis: commands sent with timeouts, scripts run by SHA and sent again after NOSCRIPT,
 * and every failure turned into a coded SluiceError.
 */
import { isSluiceError, SluiceError } from '../../core/errors.js';
import type { RedisArg, RedisTransport } from './client.js';
import { Deadlines } from './deadlines.js';
import { Readiness } from './readiness.js';
import type { Script } from './scripts.js';

/** Counters of the traffic a store sent to Redis. */
export interface RunnerStats {
  /** Commands sent (a script run counts once, however many decisions it made). */
  commands: number;
  /** Commands that failed: Redis errors, a lost connection, or sent while disconnected. */
  errors: number;
  /** Commands not answered within `timeoutMs`, or not sendable within `connectTimeoutMs` of the start. */
  timeouts: number;
  /** Scripts Redis had forgotten (restart, SCRIPT FLUSH) and that were sent again in full. */
  scriptLoads: number;
  /** Requests left undecided because Redis refused the write they needed. */
  refused: number;
}

/**
 * Sends commands with a timeout, runs scripts by SHA and reloads them after NOSCRIPT, turns every
 * failure into a SluiceError (`ERR_SLUICE_STORE_UNAVAILABLE` or `ERR_SLUICE_STORE_TIMEOUT`) and reports
 * it to `onError`. No listener is added to the client: readiness is read, not subscribed to.
 */
export class Runner {
  readonly stats: RunnerStats = { commands: 0, errors: 0, timeouts: 0, scriptLoads: 0, refused: 0 };
  private readonly deadlines: Deadlines;
  closed = false;
  /** Commands sent and not settled yet. */
  private pending = 0;
  private drained: (() => void) | undefined;
  /** Set once "not connected" was reported, so an outage under load reports it once, not per call. */
  private downReported = false;

  readonly readiness: Readiness;

  constructor(
    private readonly transport: RedisTransport,
    private readonly timeoutMs: number,
    private readonly onError: ((error: SluiceError) => void) | undefined,
    scripts: readonly Script[],
    connectTimeoutMs: number,
  ) {
    this.deadlines = new Deadlines(timeoutMs);
    this.readiness = new Readiness(transport, scripts, connectTimeoutMs, (e) => this.fail(e));
  }

  /** Runs `script` with KEYS and ARGV. */
  script(script: Script, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return this.call(script, scriptArgv(script, keys, args));
  }

  /** Runs a script call whose whole command is `argv` (`EVALSHA`, the SHA, the key count, KEYS, ARGV). */
  call(script: Script, argv: RedisArg[]): Promise<unknown> {
    return this.promised(argv, firstKeyOf(argv), script);
  }

  /**
   * {@link call}, handing `done` the reply or the error, once. No promise of its own: the store's checks
   * resolve theirs straight from the reply, one microtask sooner.
   */
  callThen(script: Script, argv: RedisArg[], done: Done): void {
    this.send(argv, firstKeyOf(argv), script, done);
  }

  /** Sends a plain command (`argv[0]` is its name); `firstKey` routes it on a cluster. */
  command(argv: string[], firstKey: string | undefined): Promise<unknown> {
    return this.promised(argv, firstKey, undefined);
  }

  /**
   * Stops taking commands (later calls fail with ERR_SLUICE_STORE_CLOSED), waits for the pending ones
   * to settle — at most the command timeout — and stops the timer.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.readiness.close();
    if (this.pending > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    this.deadlines.clear();
  }

  private promised(argv: RedisArg[], firstKey: string | undefined, script: Script | undefined): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.send(argv, firstKey, script, (error, reply) => (error === undefined ? resolve(reply) : reject(error)));
    });
  }

  private send(argv: RedisArg[], firstKey: string | undefined, script: Script | undefined, done: Done): void {
    if (this.closed) {
      done(new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the redis store was closed'));
      return;
    }
    const starting = this.readiness.pending();
    if (starting !== undefined) {
      // Before the first connection: wait for it (the window's end reports the failure once, itself).
      starting.then(
        () => this.sendNow(argv, firstKey, script, done),
        (error: unknown) => {
          if (isSluiceError(error, 'ERR_SLUICE_STORE_TIMEOUT')) this.stats.timeouts++;
          done(error as SluiceError);
        },
      );
      return;
    }
    this.sendNow(argv, firstKey, script, done);
  }

  private sendNow(argv: RedisArg[], firstKey: string | undefined, script: Script | undefined, done: Done): void {
    if (this.closed) {
      done(new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the redis store was closed'));
      return;
    }
    if (!this.transport.ready()) {
      // The client knows it is disconnected: fail now rather than pile commands into its offline queue.
      this.stats.errors++;
      const error = new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', 'redis is not connected');
      if (!this.downReported) {
        this.downReported = true;
        this.fail(error);
      }
      done(error);
      return;
    }
    this.stats.commands++;
    this.pending++;
    // The command goes out first; the timeout and the handlers are set up after the write, while Redis
    // works on it: with one caller, whatever runs before the write adds to every round trip.
    const sent = this.transmit(argv, firstKey);
    const deadline = this.deadlines.add(() => {
      this.settled();
      this.stats.timeouts++;
      done(this.fail(new SluiceError('ERR_SLUICE_STORE_TIMEOUT', `redis did not answer within ${this.timeoutMs} ms`)));
    });
    const ok = (value: unknown) => {
      if (deadline.done) return;
      deadline.done = true;
      this.settled();
      if (this.downReported) {
        // Back after an outage: a restarted or failed-over Redis has no scripts; load them for all.
        this.downReported = false;
        this.readiness.reload();
      }
      done(undefined, value);
    };
    const failed = (error: unknown) => {
      if (deadline.done) return;
      deadline.done = true;
      this.settled();
      this.stats.errors++;
      const message = error instanceof Error ? error.message : String(error);
      done(
        this.fail(
          new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `redis command failed: ${message}`, { cause: error }),
        ),
      );
    };
    sent.then(ok, (error: unknown) => {
      if (script !== undefined && !deadline.done && isNoScript(error)) {
        // Redis restarted or ran SCRIPT FLUSH: EVAL sends the source, which also caches it again.
        this.stats.scriptLoads++;
        this.stats.commands++;
        argv[0] = 'EVAL';
        argv[1] = script.source;
        this.transmit(argv, firstKey).then(ok, failed);
        return;
      }
      failed(error);
    });
  }

  /** The client's promise of a reply; a client that throws instead of rejecting is treated alike. */
  private transmit(argv: RedisArg[], firstKey: string | undefined): Promise<unknown> {
    try {
      return this.transport.send(argv, firstKey);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The error of the requests of one script call that Redis left undecided because it refused a write
   * (`message` is Redis's): counted per request, reported once per call.
   */
  refused(message: string): SluiceError {
    this.stats.errors++;
    const error = new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `redis refused a write: ${message}`);
    return this.fail(error);
  }

  private settled(): void {
    if (--this.pending === 0 && this.drained !== undefined) {
      this.drained();
      this.drained = undefined;
    }
  }

  private fail(error: SluiceError): SluiceError {
    if (this.onError !== undefined) {
      try {
        this.onError(error);
      } catch {
        // A throwing onError must not turn a store failure into a crash.
      }
    }
    return error;
  }
}

/** What a command's sender hears: its error (a SluiceError), or `undefined` and the reply. */
export type Done = (error: SluiceError | undefined, reply?: unknown) => void;

/** A script call's first key (it routes the call on a cluster), if it has keys. */
function firstKeyOf(argv: readonly RedisArg[]): string | undefined {
  return argv[2] === '0' ? undefined : (argv[3] as string);
}

/** A script call's whole command: `EVALSHA`, the SHA, the key count, KEYS, then ARGV. */
export function scriptArgv(script: Script, keys: readonly string[], args: readonly RedisArg[]): RedisArg[] {
  const argv: RedisArg[] = ['EVALSHA', script.sha, String(keys.length)];
  for (const k of keys) argv.push(k);
  for (const a of args) argv.push(a);
  return argv;
}

/** Redis's NOSCRIPT error, as ioredis and node-redis pass it on, or as valkey-glide words it. */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && (error.message.startsWith('NOSCRIPT') || error.message.includes('NoScriptError'));
}
