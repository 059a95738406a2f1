/**
 * A bound on what one reply from a peer region's Redis may cost this process. A Redis client buffers a
 * reply whole before handing it over, so a peer answering 50 MB replies (a hostile or broken server
 * at a peer's URL, or a proxy gone wrong) grew the service to 623 MB. A sync reply is small — a MERGE
 * answers six fields per record, eight records a script — so the bytes the client reads between two
 * replies are counted on its socket as they arrive, and past the bound the connection is dropped
 * before more is buffered: the commands waiting on it fail with `ERR_SLUICE_MULTI_REGION_REPLY_TOO_LARGE`
 * (the sync counts it and retries with backoff) and the client reconnects by itself.
 *
 * Only clients whose socket can be watched are bounded: an ioredis or iovalkey `Redis` (its `stream`,
 * a new one per connection, announced by its 'connect' event). A Cluster client, node-redis and
 * valkey-glide are left as they are. The count starts over at every reply to a command sent through
 * {@link ReplyWatcher.wrap}, so a peer client must be the store's alone (other commands' replies on it
 * count towards the next sync reply).
 */
import { SluiceError } from '../../core/errors.js';
import type { RedisClientLike, RedisTransport } from '../redis/client.js';

/** The socket of a connection, as much of it as is watched. */
interface Socket {
  on(event: 'data', listener: (chunk: { length: number }) => void): unknown;
  removeListener(event: 'data', listener: (chunk: { length: number }) => void): unknown;
  destroy(error?: Error): unknown;
}

/** An ioredis or iovalkey `Redis`: its current socket, and an event at every new connection. */
interface SocketClient {
  readonly stream?: Socket;
  readonly isCluster?: boolean;
  on(event: 'connect', listener: () => void): unknown;
  removeListener(event: 'connect', listener: () => void): unknown;
}

/** Options of {@link limitReplyBytes}. */
export interface ReplyLimit {
  /** Most bytes read for one reply. */
  readonly maxBytes: number;
  /** The region the client reaches, for the error's message. */
  readonly region: string;
}

const watchers = new WeakMap<object, ReplyWatcher>();

function isSocketClient(client: unknown): client is SocketClient {
  const c = client as Partial<SocketClient> & { call?: unknown };
  return (
    typeof c?.call === 'function' &&
    typeof c.on === 'function' &&
    typeof c.removeListener === 'function' &&
    c.isCluster !== true
  );
}

/**
 * Bounds the bytes `client` (an ioredis or iovalkey `Redis`) reads per reply, from now on — call it before
 * the client connects to bound its first connection's replies too (`sluice serve` does for its peers).
 * The multi-region store does it for every peer client by itself, with `maxPeerReplyBytes`. Calling it
 * again on the same client changes the bound of the one watcher. Returns undefined for clients it
 * cannot watch (see the top of this file).
 */
export function limitReplyBytes(client: RedisClientLike, limit: ReplyLimit): ReplyWatcher | undefined {
  if (!isSocketClient(client)) return undefined;
  let watcher = watchers.get(client);
  if (watcher === undefined) {
    watcher = new ReplyWatcher(client, limit);
    watchers.set(client, watcher);
  } else {
    watcher.limit = limit;
  }
  return watcher;
}

/** Watches one client's sockets; see {@link limitReplyBytes}. */
export class ReplyWatcher {
  /** Replies refused so far (connections dropped). */
  refused = 0;
  /** Bytes read on the current socket since the last reply to a command sent through wrap(). */
  private bytes = 0;
  private socket: Socket | undefined;
  /** Commands sent through wrap() and not answered: failed at once when the connection is dropped. */
  private readonly waiting = new Set<(error: SluiceError) => void>();
  private closed = false;

  constructor(
    private readonly client: SocketClient,
    public limit: ReplyLimit,
  ) {
    client.on('connect', this.follow);
    this.follow();
  }

  /** `transport` (of this watcher's client), its replies bounded. */
  wrap(transport: RedisTransport): RedisTransport {
    return {
      send: (args, firstKey) => this.track(() => transport.send(args, firstKey)),
      sendToAll: (args) => this.track(() => transport.sendToAll(args)),
      ready: () => transport.ready(),
      connected: () => transport.connected(),
      cluster: transport.cluster,
    };
  }

  /** Stops watching (the store closed). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.removeListener('connect', this.follow);
    this.socket?.removeListener('data', this.read);
    this.socket = undefined;
    watchers.delete(this.client);
  }

  /** Starts counting on the client's current socket, if it is a new one. */
  private readonly follow = () => {
    const socket = this.client.stream;
    if (this.closed || socket === undefined || socket === this.socket) return;
    this.socket?.removeListener('data', this.read);
    this.socket = socket;
    this.bytes = 0;
    socket.on('data', this.read);
  };

  // The count starts over in a promise callback, which runs after every 'data' listener of the chunk
  // (the client's parser's and this one, in either order): a chunk that holds the end of one reply and
  // the start of the next counts to the reply it ends. The bound holds to within one read (64 KB).
  private readonly read = (chunk: { length: number }) => {
    this.bytes += chunk.length;
    if (this.bytes <= this.limit.maxBytes || this.socket === undefined) return;
    const socket = this.socket;
    this.socket = undefined;
    this.bytes = 0;
    this.refused++;
    socket.removeListener('data', this.read);
    const { maxBytes, region } = this.limit;
    const error = new SluiceError(
      'ERR_SLUICE_MULTI_REGION_REPLY_TOO_LARGE',
      `region ${region}'s Redis sent more than ${maxBytes} bytes for one reply (maxPeerReplyBytes): the ` +
        "connection was dropped and the sync retries with backoff; check that the peer's URL is that region's Redis",
    );
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const fail of waiting) fail(error);
    // The client sees the socket close and reconnects by itself; what it had buffered goes with it.
    // The commands that waited carry the error to the sync, which reports it once per outage; a reply
    // no sync waited for (the client's ready check) is reported through the client's 'error' event.
    if (waiting.length > 0) socket.destroy();
    else socket.destroy(error);
  };

  private track(send: () => Promise<unknown>): Promise<unknown> {
    this.follow();
    return new Promise((resolve, reject) => {
      let done = false;
      const fail = (error: unknown) => {
        if (done) return;
        done = true;
        this.waiting.delete(fail);
        reject(error);
      };
      this.waiting.add(fail);
      let sent: Promise<unknown>;
      try {
        sent = send();
      } catch (error) {
        fail(error);
        return;
      }
      sent.then(
        (reply) => {
          if (done) return;
          done = true;
          this.waiting.delete(fail);
          this.bytes = 0;
          resolve(reply);
        },
        (error: unknown) => {
          if (!done) this.bytes = 0;
          fail(error);
        },
      );
    });
  }
}
