/**
 * `grpc.health.v1.Health/Watch`: a server-streaming call that sends a service's status at once and then
 * every change (https://github.com/grpc/grpc/blob/master/doc/health-checking.md). One hub serves the
 * watchers of both gRPC servers; each server only adapts its stream to a {@link WatchSink}.
 *
 * What a watcher can cost is bounded: a cap on watchers in all, per client address (IPv6: its /56) and per
 * connection (a client past one gets RESOURCE_EXHAUSTED, and every other call is served as before). The
 * per-address cap is what keeps one client from taking every slot with many connections, so that other
 * clients' health checking still gets its Watch, and at most one unsent status per
 * watcher — a client that does not read keeps only the newest status waiting, as grpc-go's health server
 * does, so a never-reading client holds a few bytes, not a growing queue.
 */

import { coalescedRun } from '../../support/coalesced-run.js';
import type { GrpcHealthCheck, WatchStatus } from './health-service.js';
import { WatchSlots } from './watch-slots.js';

export type { WatchStatus };

/** Where one Watch call's statuses go: its server's stream. */
export interface WatchSink {
  /** Sends one status; false when the stream's buffer is full (the server then calls `drained()` later). */
  write(status: WatchStatus): boolean;
  /** Ends the call because the server is shutting down (gRPC UNAVAILABLE: the client retries elsewhere). */
  end(): void;
}

/** One open Watch, as its server sees it. */
export interface Watcher {
  /** The stream can take more: the newest status not yet sent (if any) goes now. */
  drained(): void;
  /** The call is over (the client cancelled, the connection went): forget it. Idempotent. */
  close(): void;
}

/** Bounds and pace of {@link createHealthWatch}. */
export interface HealthWatchOptions {
  /** The status of a service (undefined: the server does not know it). */
  check: GrpcHealthCheck;
  /** Most open watches in all. @default 1000 */
  maxWatches?: number;
  /** Most open watches on one connection. @default 16 */
  maxWatchesPerConnection?: number;
  /** Most open watches from one client address (IPv6: its /56), over all its connections. @default 64 */
  maxWatchesPerClient?: number;
  /** How often the status is looked at while someone watches (changes are sent at most this late). @default 1000 */
  pollMs?: number;
}

/** The Watch hub of one service. */
export interface HealthWatch {
  /**
   * Starts a watch of `service` for a call on `connection` (any value that identifies the connection)
   * from `client` (its address key, see peer-key.ts). Undefined when a cap is reached: the server answers
   * RESOURCE_EXHAUSTED.
   */
  open(service: string, connection: unknown, sink: WatchSink, client?: string): Watcher | undefined;
  /** Looks at the status now and sends changes (e.g. when draining starts). */
  refresh(): Promise<void>;
  /** Shutdown: NOT_SERVING to every watcher of a known service, then every call ends. Later opens are refused. */
  close(): void;
  /** Open watches. */
  readonly size: number;
}

interface Entry {
  readonly service: string;
  readonly connection: unknown;
  readonly client: string | undefined;
  readonly sink: WatchSink;
  /** The last status written to the stream. */
  sent: WatchStatus | undefined;
  /** The newest status not written yet because the stream was full. */
  pending: WatchStatus | undefined;
  blocked: boolean;
  /** The evaluation the last offered status came from: an older one arriving late is dropped. */
  generation: number;
}

/** The hub's state, shared by its parts below. */
interface Hub {
  readonly check: GrpcHealthCheck;
  readonly slots: WatchSlots;
  readonly pollMs: number;
  readonly entries: Set<Entry>;
  /** The poll, running while a watch is open. */
  timer: NodeJS.Timeout | undefined;
  closed: boolean;
  /** Counts evaluations, so that a late answer of an older one loses to a newer. */
  generation: number;
  /** {@link evaluate}, with overlapping calls coalesced. */
  refresh: () => Promise<void>;
}

/** Creates the Watch hub. The poll timer runs only while a watch is open, and never holds the process. */
export function createHealthWatch(options: HealthWatchOptions): HealthWatch {
  const hub: Hub = {
    check: options.check,
    slots: new WatchSlots({
      maxWatches: options.maxWatches ?? 1000,
      perConnection: options.maxWatchesPerConnection ?? 16,
      perClient: options.maxWatchesPerClient ?? 64,
    }),
    pollMs: options.pollMs ?? 1000,
    entries: new Set<Entry>(),
    timer: undefined,
    closed: false,
    generation: 0,
    refresh: () => Promise.resolve(),
  };
  hub.refresh = coalescedRun(
    () => evaluate(hub),
    () => hub.closed,
  );
  return {
    open: (service, connection, sink, client) => openWatch(hub, service, connection, sink, client),
    refresh: hub.refresh,
    close: () => closeHub(hub),
    get size() {
      return hub.entries.size;
    },
  };
}

/** A service's status now; a failing check reads as NOT_SERVING. */
async function statusOf(hub: Hub, service: string): Promise<WatchStatus> {
  try {
    return (await hub.check(service)) ?? 'SERVICE_UNKNOWN';
  } catch {
    return 'NOT_SERVING';
  }
}

/** Starts a watch (undefined when a cap is reached): its first status at once, changes from the poll. */
function openWatch(
  hub: Hub,
  service: string,
  connection: unknown,
  sink: WatchSink,
  client: string | undefined,
): Watcher | undefined {
  if (hub.closed || !hub.slots.take(connection, client)) return undefined;
  const entry: Entry = {
    service,
    connection,
    client,
    sink,
    sent: undefined,
    pending: undefined,
    blocked: false,
    generation: 0,
  };
  const { entries } = hub;
  entries.add(entry);
  if (hub.timer === undefined) {
    hub.timer = setInterval(() => void hub.refresh(), hub.pollMs);
    hub.timer.unref();
  }
  // The first message is the status now; later ones come from refresh() when it changes.
  const from = ++hub.generation;
  void statusOf(hub, service).then((status) => {
    if (!hub.closed) offer(entries, entry, status, from);
  });
  return {
    drained() {
      entry.blocked = false;
      const pending = entry.pending;
      if (pending !== undefined) offer(entries, entry, pending, entry.generation);
    },
    close: () => forget(hub, entry),
  };
}

/** Forgets a watch that ended: its slot back, and the poll stopped when it was the last. */
function forget(hub: Hub, entry: Entry): void {
  if (!hub.entries.delete(entry)) return;
  hub.slots.give(entry.connection, entry.client);
  if (hub.entries.size === 0 && hub.timer !== undefined) {
    clearInterval(hub.timer);
    hub.timer = undefined;
  }
}

/** Looks at every watched service once and offers each watcher its status. */
async function evaluate(hub: Hub): Promise<void> {
  // One look per distinct service name, shared by its watchers.
  const statuses = new Map<string, Promise<WatchStatus>>();
  const from = ++hub.generation;
  const snapshot = [...hub.entries];
  for (const entry of snapshot) {
    if (!statuses.has(entry.service)) statuses.set(entry.service, statusOf(hub, entry.service));
  }
  for (const entry of snapshot) {
    const status = await (statuses.get(entry.service) as Promise<WatchStatus>);
    if (!hub.closed) offer(hub.entries, entry, status, from);
  }
}

/** Shutdown: NOT_SERVING to every watcher of a known service, then every call ends. */
function closeHub(hub: Hub): void {
  if (hub.closed) return;
  hub.closed = true;
  if (hub.timer !== undefined) clearInterval(hub.timer);
  hub.timer = undefined;
  for (const entry of [...hub.entries]) {
    try {
      // Written even to a full stream: one more small message, so the client learns why the call ends.
      if (entry.sent !== 'SERVICE_UNKNOWN' && entry.sent !== 'NOT_SERVING') entry.sink.write('NOT_SERVING');
      entry.sink.end();
    } catch {
      // The call is already gone.
    }
    forget(hub, entry);
  }
}

/**
 * Offers a watcher a status from evaluation `from`: written at once unless it is the one sent, kept as the one
 * pending while the stream is full (only the newest waits), dropped when an older evaluation arrives late.
 */
function offer(entries: ReadonlySet<Entry>, entry: Entry, status: WatchStatus, from: number): void {
  if (!entries.has(entry) || from < entry.generation) return;
  entry.generation = from;
  if (entry.blocked) {
    entry.pending = status === entry.sent ? undefined : status;
    return;
  }
  if (status === entry.sent) return;
  entry.sent = status;
  entry.pending = undefined;
  try {
    if (!entry.sink.write(status)) entry.blocked = true;
  } catch {
    // The stream went between its close event and this write; its close() forgets it.
  }
}
