/**
 * Bounds on unfinished gRPC requests: bytes per message, per connection and in all, and the time a message may take.
 */
import type { ServerHttp2Stream } from 'node:http2';
import { performance } from 'node:perf_hooks';
import { type DeadlineEntry, DeadlineList } from '../../support/deadlines.js';

/** How much unfinished request data the gRPC servers hold, and for how long. */
export interface ReceiveLimits {
  /** Largest request message (after the 5-byte gRPC prefix). @default 1 MiB */
  readonly maxMessageBytes: number;
  /** Most bytes of unfinished request messages one connection may hold at once. @default 4 MiB */
  readonly maxConnectionBufferBytes: number;
  /** Most bytes of unfinished request messages all connections together may hold. @default 64 MiB */
  readonly maxTotalBufferBytes: number;
  /** Longest time from a call's headers to the end of its request message. @default 10 s */
  readonly messageTimeoutMs: number;
}

/** The defaults of {@link ReceiveLimits}: an RLS request is a few hundred bytes, so these leave ample room. */
export const DEFAULT_RECEIVE_LIMITS: ReceiveLimits = {
  maxMessageBytes: 1024 * 1024,
  maxConnectionBufferBytes: 4 * 1024 * 1024,
  maxTotalBufferBytes: 64 * 1024 * 1024,
  messageTimeoutMs: 10_000,
};

/**
 * How often unfinished calls are looked at, ms. A deadline fires up to two of these late (one for the
 * coarse clock, one for the sweep), so this sets how far past the bound a call may wait: a quarter of the
 * timeout let the 10 s default wait 12.5–15 s. At most 100 ms keeps any bound within 0.2 s;
 * a sweep that finds nothing due costs a clock read, ten a second while calls are receiving.
 */
export function receiveResolutionMs(timeoutMs: number): number {
  return Math.min(100, Math.max(10, Math.ceil(timeoutMs / 20)));
}

/** Why a call's request was cut off. */
export type ReceiveFailure = 'too-large' | 'connection-budget' | 'total-budget' | 'timeout';

/** The gRPC status name and message of each failure. */
export function describeFailure(
  failure: ReceiveFailure,
  limits: ReceiveLimits,
): { status: 'RESOURCE_EXHAUSTED' | 'DEADLINE_EXCEEDED'; message: string } {
  switch (failure) {
    case 'too-large':
      return { status: 'RESOURCE_EXHAUSTED', message: `request message larger than ${limits.maxMessageBytes} bytes` };
    case 'connection-budget':
      return {
        status: 'RESOURCE_EXHAUSTED',
        message: `this connection holds more than ${limits.maxConnectionBufferBytes} bytes of unfinished requests`,
      };
    case 'total-budget':
      return {
        status: 'RESOURCE_EXHAUSTED',
        message: `the server holds more than ${limits.maxTotalBufferBytes} bytes of unfinished requests`,
      };
    default:
      return {
        status: 'DEADLINE_EXCEEDED',
        message: `the request message did not arrive within ${limits.messageTimeoutMs} ms`,
      };
  }
}

/** One call's share of the budgets, from its headers until its message is complete (or it failed). */
export interface Reception {
  /** Counts `bytes` more of this call's request; the failure when that crosses a bound (reported once). */
  add(bytes: number): ReceiveFailure | undefined;
  /** The message is complete (or the call is over): gives the bytes back and stops the timer. Idempotent. */
  release(): void;
}

/**
 * Accounts the request bytes that gRPC calls hold before their message is complete, per connection and in
 * total, and times each call's reception. A client that opens many streams and sends part of a message on
 * each — then waits, or leaves — can hold no more than these bounds, and no longer than the timeout.
 */
export interface ReceiveGuard {
  readonly limits: ReceiveLimits;
  /** Bytes held right now by unfinished requests, all connections. */
  readonly heldBytes: number;
  /**
   * Starts one call's reception on `connection` (its HTTP/2 session: any object that stands for it);
   * `onTimeout` runs once if the message is still unfinished in time, with `self` as `this` (so that one
   * function serves every call, with no closure per call).
   */
  open<T>(connection: object | undefined, onTimeout: (this: T) => void, self?: T): Reception;
}

/**
 * Creates a guard with `limits` (defaults for those not given). Receptions are timed by one coarse sweep
 * (every {@link receiveResolutionMs}, while any is open) over a list kept in deadline order, not by a timer per
 * call: a call costs two links on the hot path. A list through the receptions rather than a `Set`, for
 * the reason the HTTP drain gave one up (http/drain.ts): a Set that gains and loses an entry per call
 * chains its rehashed tables, and the calls they held, into V8's old generation.
 */
export function createReceiveGuard(limits: Partial<ReceiveLimits> = {}): ReceiveGuard {
  const resolved: ReceiveLimits = { ...DEFAULT_RECEIVE_LIMITS, ...definedOnly(limits) };
  const perSession = new WeakMap<object, Account>();
  const noSession: Account = { held: 0 };
  const totals: Account = { held: 0 };
  const open = new DeadlineList(
    resolved.messageTimeoutMs,
    receiveResolutionMs(resolved.messageTimeoutMs),
    performance.now.bind(performance),
  );

  return {
    limits: resolved,
    get heldBytes() {
      return totals.held;
    },
    open(connection, onTimeout, self) {
      let account = connection === undefined ? noSession : perSession.get(connection);
      if (account === undefined) {
        account = { held: 0 };
        perSession.set(connection as object, account);
      }
      const reception = new CallReception(resolved, account, totals, open, onTimeout as (this: unknown) => void, self);
      open.add(reception);
      return reception;
    },
  };
}

/** Bytes held, by one connection or by all. */
interface Account {
  held: number;
}

/** One call's reception: one object per call (it is also its entry in the list of deadlines). */
class CallReception implements Reception, DeadlineEntry {
  deadlineAt = 0;
  deadlinePrev: DeadlineEntry | undefined = undefined;
  deadlineNext: DeadlineEntry | undefined = undefined;
  private mine = 0;
  private done = false;

  constructor(
    private readonly limits: ReceiveLimits,
    private readonly conn: Account,
    private readonly totals: Account,
    private readonly open: DeadlineList,
    private readonly onTimeout: (this: unknown) => void,
    private readonly self: unknown,
  ) {}

  add(bytes: number): ReceiveFailure | undefined {
    if (this.done) return undefined;
    let failure: ReceiveFailure | undefined;
    if (this.mine + bytes > this.limits.maxMessageBytes + 5) failure = 'too-large';
    else if (this.conn.held + bytes > this.limits.maxConnectionBufferBytes) failure = 'connection-budget';
    else if (this.totals.held + bytes > this.limits.maxTotalBufferBytes) failure = 'total-budget';
    if (failure !== undefined) {
      this.release();
      return failure;
    }
    this.mine += bytes;
    this.conn.held += bytes;
    this.totals.held += bytes;
    return undefined;
  }

  release(): void {
    if (this.done) return;
    this.done = true;
    this.open.remove(this);
    this.conn.held -= this.mine;
    this.totals.held -= this.mine;
    this.mine = 0;
  }

  expire(): void {
    this.release();
    this.onTimeout.call(this.self);
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * True while a server stream can still be answered: not destroyed, not closed (a client's RST_STREAM or a
 * dropped connection closes it before any `'end'` handler runs), and its session alive.
 */
export function isAnswerable(stream: ServerHttp2Stream): boolean {
  return !stream.destroyed && !stream.closed && stream.session !== undefined && !stream.session.destroyed;
}
