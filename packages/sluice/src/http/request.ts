/**
 * How the framework-neutral core sees a request: each adapter says how to read its framework's
 * request (`RequestAccess`), and every option that is a function gets the native request plus a
 * neutral `HttpRequestInfo`, so one function works under every framework.
 */

/** A value or a promise of it: options may be async (e.g. a key looked up in a database). */
export type Awaitable<T> = T | Promise<T>;

/** A framework-neutral view of a request, the second argument of every option that is a function. */
export interface HttpRequestInfo {
  /** The client's address (the TCP peer, or the forwarded client behind a trusted proxy); `''` if unknown. */
  readonly ip: string;
  /** The key the address counts under by default: IPv4 as is, IPv6 masked to its `/ipv6Subnet`. */
  readonly ipKey: string;
  /** The request method, upper-case. */
  readonly method: string;
  /** The path, without the query string. */
  readonly path: string;
  /** A request header by lower-case name; repeated headers joined with `, `. */
  header(name: string): string | undefined;
}

/** An option computed from the request: the framework's own request, and the neutral view of it. */
export type RequestFn<Req, T> = (req: Req, info: HttpRequestInfo) => Awaitable<T>;

/** How an adapter reads its framework's request. Functions, not closures, so nothing is allocated per request. */
export interface RequestAccess<Req> {
  /** The TCP peer's address (`socket.remoteAddress`). */
  peer(req: Req): string | undefined;
  /** A header by lower-case name. */
  header(req: Req, name: string): string | undefined;
  /** The method. */
  method(req: Req): string;
  /** The request target: path and query. */
  url(req: Req): string;
  /** Every header, lower-case names (for rules' `http:` actions). */
  headers(req: Req): Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The framework's own proxy trust, for frameworks that have one. */
  readonly framework?: FrameworkTrust<Req>;
  /** The framework's name (`'Express'`, `'Fastify'`, …), for messages that speak its users' language. */
  readonly name?: string;
  /** What an earlier sluice middleware put on the request (`req.rateLimit`), so stacked ones list every policy. */
  rateLimitOf?(req: Req): unknown;
  /** The request body as the framework parsed it, for the `tokenBudget` option (none: not read). */
  body?(req: Req): Awaitable<unknown>;
}

/**
 * A framework's own trust-proxy setting (Express `trust proxy`, Koa `app.proxy`, Fastify
 * `trustProxy`), honoured when sluice's `trustProxy` is not given.
 */
export interface FrameworkTrust<Req> {
  /** How the setting is written, for messages (`"app.set('trust proxy', …)"`). */
  readonly setting: string;
  /** A safe value of the setting, for messages. */
  readonly example: string;
  /** The client address as the framework resolved it, or undefined when its setting trusts no proxy. */
  clientIp(req: Req): string | undefined;
  /** True when the setting trusts every peer, so any client can choose its address. */
  permissive(req: Req): boolean;
}

/** The neutral view, computed lazily from the native request. */
export class RequestView<Req> implements HttpRequestInfo {
  readonly ip: string;
  readonly ipKey: string;
  readonly #req: Req;
  readonly #access: RequestAccess<Req>;

  constructor(req: Req, access: RequestAccess<Req>, ip: string, ipKey: string) {
    this.#req = req;
    this.#access = access;
    this.ip = ip;
    this.ipKey = ipKey;
  }

  get method(): string {
    return this.#access.method(this.#req);
  }

  get path(): string {
    const url = this.#access.url(this.#req);
    const q = url.indexOf('?');
    return q === -1 ? url : url.slice(0, q);
  }

  header(name: string): string | undefined {
    return this.#access.header(this.#req, name.toLowerCase());
  }
}

/** Reads a header out of a Node-style headers object (`string | string[] | undefined` values). */
export function nodeHeader(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
