/** The gateway's keep-alive pool of upstream connections, capped, with idle sockets timed out. */
import { type AgentOptions, type ClientRequest, Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Duplex } from 'node:stream';

/**
 * The gateway's keep-alive pool of upstream connections. Node's agent with a `timeout` option bounds an
 * idle socket by adding a 'timeout' listener to the socket for every request it carries (and removing it
 * after); here the idle timeout is set once, when the socket is made, with one listener for its lifetime:
 * a socket silent for `idleTimeoutMs` — pooled, or carrying a request — is destroyed (a request on it then
 * fails as with Node's option: 502, or the client's response cut).
 */
export function createUpstreamAgent(secure: boolean, maxSockets: number, idleTimeoutMs: number): HttpAgent {
  const options: AgentOptions = { keepAlive: true, maxSockets };
  const Base = secure ? HttpsAgent : HttpAgent;
  const agent = new Base(options) as HttpAgent & {
    createConnection(options: unknown, callback?: unknown): Duplex;
    keepSocketAlive(socket: Duplex): boolean;
  };
  const create = agent.createConnection.bind(agent);
  agent.createConnection = (opts: unknown, callback?: unknown) => {
    const socket = create(opts, callback) as Duplex & { setTimeout(ms: number): void };
    if (idleTimeoutMs > 0) {
      socket.setTimeout(idleTimeoutMs);
      socket.on('timeout', destroyIdle);
    }
    return socket;
  };
  // Node's keepSocketAlive would reset the socket's timeout to the agent's (none); its other work, kept:
  // keep-alive probes on, the socket unreferenced while pooled, and an upstream's `Keep-Alive: timeout=N`
  // hint honoured (a socket the upstream will close within a second is not pooled).
  agent.keepSocketAlive = (socket: Duplex) => {
    const s = socket as Duplex & {
      setKeepAlive(on: boolean, ms: number): void;
      unref(): void;
      setTimeout(ms: number): void;
      _httpMessage?: ClientRequest & { res?: { rawHeaders: string[] } };
    };
    s.setKeepAlive(true, 1000);
    s.unref();
    const hint = keepAliveHint(s._httpMessage?.res?.rawHeaders);
    if (hint !== undefined) {
      const seconds = /^timeout=(\d+)/.exec(hint)?.[1];
      if (seconds !== undefined) {
        const ms = Number(seconds) * 1000 - 1000;
        if (ms <= 0) return false;
        if (idleTimeoutMs === 0 || ms < idleTimeoutMs) s.setTimeout(ms);
      }
    }
    return true;
  };
  return agent;
}

function destroyIdle(this: Duplex): void {
  this.destroy();
}

/**
 * A response's `Keep-Alive` header, read from its raw header list: `headers` would make Node build the
 * response's whole header object, which the gateway otherwise never needs.
 */
function keepAliveHint(raw: readonly string[] | undefined): string | undefined {
  if (raw === undefined) return undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 10 && name.toLowerCase() === 'keep-alive') return raw[i + 1];
  }
  return undefined;
}
