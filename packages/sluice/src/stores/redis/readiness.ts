/**
 * The Redis store's start-up: until the first connection and script load, commands wait (up to `connectTimeoutMs`)
 * instead of failing, so a process taking traffic as it starts decides its first requests exactly.
 */
import { SluiceError } from '../../core/errors.js';
import type { RedisTransport } from './client.js';
import type { Script } from './scripts.js';

/** Polling period while the connect window is open: a store that starts under load starts at once. */
const FAST_POLL_MS = 5;
/** Polling period after the window closed without a connection (the failure policy answers meanwhile). */
const SLOW_POLL_MS = 500;

/**
 * The store's start. Until the client has connected for the first time and the scripts are loaded, a
 * command waits — for at most `connectTimeoutMs` from the store's creation — instead of failing fast:
 * a process that takes traffic as it starts (or restarts, or is deployed) decides its first requests
 * exactly, not by the failure policy. Fail-fast stays for a client that was connected and lost it.
 *
 * Readiness is read by polling the client's state (a few ms apart, only until the first connection),
 * never by adding listeners to a client that belongs to the caller.
 */
export class Readiness {
  /** True once the client was ready and the scripts were loaded. */
  isReady = false;
  private windowOpen: boolean;
  private closed = false;
  /** Settles when the store is ready (resolves) or the connect window closes first (rejects). */
  private readonly gate: Promise<void>;
  private openGate!: () => void;
  private shutGate!: (error: SluiceError) => void;
  /** Resolves when the store is ready, however long that takes. */
  private readonly first: Promise<void>;
  private markFirst!: () => void;
  private loading = false;
  private poller: ReturnType<typeof setTimeout> | undefined;
  private windowTimer: ReturnType<typeof setTimeout> | undefined;
  /** What SCRIPT LOAD loads: the store's scripts, then each one added (addScript). */
  private readonly scripts: Script[];

  constructor(
    private readonly transport: RedisTransport,
    scripts: readonly Script[],
    private readonly connectTimeoutMs: number,
    private readonly onError: (error: SluiceError) => void,
  ) {
    this.scripts = [...scripts];
    this.gate = new Promise<void>((resolve, reject) => {
      this.openGate = resolve;
      this.shutGate = reject;
    });
    // Callers attach their own handlers; this one only keeps an unwaited gate from being "unhandled".
    this.gate.catch(() => undefined);
    this.first = new Promise<void>((resolve) => {
      this.markFirst = resolve;
    });
    this.windowOpen = connectTimeoutMs > 0;
    if (this.windowOpen) {
      // Not unref'd: a command waiting for the first connection is settled by this timer at the latest,
      // and a process must not exit with it unsettled. It runs at most connectTimeoutMs, once.
      this.windowTimer = setTimeout(() => this.closeWindow(), connectTimeoutMs);
    } else {
      this.shutGate(this.notReady());
    }
    this.poll();
  }

  /**
   * What a command must wait for before it is sent: the first connection, while the connect window is
   * open; undefined once the store is ready or the window has closed (then commands go straight on).
   */
  pending(): Promise<void> | undefined {
    return this.isReady || !this.windowOpen ? undefined : this.gate;
  }

  /** Resolves once the store can decide; rejects with ERR_SLUICE_STORE_TIMEOUT after `waitMs`. */
  wait(waitMs = this.connectTimeoutMs): Promise<void> {
    if (this.isReady) return Promise.resolve();
    if (this.closed) return Promise.reject(new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the redis store was closed'));
    return new Promise<void>((resolve, reject) => {
      const timer = unref(setTimeout(() => reject(this.notReady(waitMs)), waitMs));
      void this.first.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * Loads one more script once the store is ready, and with the others after every outage. Rejects
   * when the store does not become ready within the connect timeout, or the load fails.
   */
  addScript(script: Script): Promise<void> {
    return this.wait()
      .then(() => this.bounded(this.transport.sendToAll(['SCRIPT', 'LOAD', script.source])))
      .then(() => {
        this.scripts.push(script);
      });
  }

  /** Loads the scripts again (after an outage: a restarted or failed-over Redis has none). */
  reload(): void {
    if (!this.closed) this.load().catch(() => undefined);
  }

  close(): void {
    this.closed = true;
    if (this.poller !== undefined) clearTimeout(this.poller);
    if (this.windowTimer !== undefined) clearTimeout(this.windowTimer);
    if (this.windowOpen) {
      this.windowOpen = false;
      this.shutGate(new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the redis store was closed'));
    }
  }

  private poll(): void {
    if (this.closed || this.isReady) return;
    if (!this.loading && this.transport.connected()) {
      this.loading = true;
      this.load().then(
        () => this.becomeReady(),
        () => {
          this.loading = false;
        },
      );
    }
    this.poller = unref(setTimeout(() => this.poll(), this.windowOpen ? FAST_POLL_MS : SLOW_POLL_MS));
  }

  /** SCRIPT LOAD of every script on every master, bounded in time so a silent server cannot wedge it. */
  private load(): Promise<unknown> {
    return this.bounded(Promise.all(this.scripts.map((s) => this.transport.sendToAll(['SCRIPT', 'LOAD', s.source]))));
  }

  /** `loads`, or a rejection once it took longer than the connect timeout (at least a second). */
  private bounded(loads: Promise<unknown>): Promise<unknown> {
    const bound = Math.max(1000, this.connectTimeoutMs);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = unref(setTimeout(() => reject(new Error('SCRIPT LOAD timed out')), bound));
    });
    return Promise.race([loads, timeout]).finally(() => clearTimeout(timer));
  }

  private becomeReady(): void {
    this.loading = false;
    if (this.closed) return;
    this.isReady = true;
    if (this.poller !== undefined) clearTimeout(this.poller);
    if (this.windowTimer !== undefined) clearTimeout(this.windowTimer);
    this.windowOpen = false;
    this.openGate();
    this.markFirst();
  }

  private closeWindow(): void {
    if (!this.windowOpen) return;
    this.windowOpen = false;
    const error = this.notReady();
    this.shutGate(error);
    this.onError(error);
  }

  private notReady(waitMs = this.connectTimeoutMs): SluiceError {
    return new SluiceError(
      'ERR_SLUICE_STORE_TIMEOUT',
      `redis was not ready within ${waitMs} ms (connectTimeoutMs): the client has not connected, or SCRIPT LOAD failed`,
    );
  }
}

/** Timers must not hold the process open; where timers are numbers (no unref), nothing to do. */
function unref<T>(timer: T): T {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}
