/**
 * The connections sluice/postgres decides on, from what the user passes: a `pg` Pool, a `pg` Client, or a
 * `postgres` (postgres.js) sql instance — each as sessions that run SQL text and give back each statement's rows.
 */
import type { SqlSession } from './postgres-backend.js';

/** What sluice needs of a `pg` result: its rows. */
interface PgResult {
  rows: Record<string, unknown>[];
}
/** A `pg` Client or a Pool's client, as far as sluice uses it. */
export interface PgQueryable {
  query(text: string): Promise<PgResult | PgResult[]>;
}
/** A client a `pg` Pool lends: it can be given back, and says when its connection fails. */
interface PgPooledClient extends PgQueryable {
  release(error?: Error | boolean): void;
  on?(event: 'error', listener: (error: Error) => void): unknown;
  removeListener?(event: 'error', listener: (error: Error) => void): unknown;
}
/** A `pg` Pool, as far as sluice uses it. */
export interface PgPool extends PgQueryable {
  connect(): Promise<PgPooledClient>;
  readonly totalCount: number;
  readonly options?: { max?: number };
}
/** A postgres.js result: the rows of one statement (with its `command`), or one such array per statement. */
type PostgresJsResult = Record<string, unknown>[] & { command?: string };
/** A postgres.js connection reserved for one transaction. */
interface PostgresJsReserved {
  unsafe(text: string): Promise<PostgresJsResult | PostgresJsResult[]>;
  release(): void;
}
/** A postgres.js `sql` instance, as far as sluice uses it. */
export interface PostgresJsSql {
  (...args: never[]): unknown;
  unsafe(text: string): unknown;
  reserve(): Promise<PostgresJsReserved>;
  readonly options?: { max?: number };
}

/** The kinds of client sluice/postgres takes, told apart by shape (no driver is imported). */
export type PostgresClientKind = 'pg-pool' | 'pg-client' | 'postgres-js';

/** Which kind of client `client` is, or undefined for anything else. */
export function postgresClientKind(client: unknown): PostgresClientKind | undefined {
  if (typeof client === 'function') {
    const sql = client as Partial<PostgresJsSql>;
    return typeof sql.unsafe === 'function' && typeof sql.reserve === 'function' ? 'postgres-js' : undefined;
  }
  const c = client as Partial<PgPool> | null;
  if (c === null || typeof c !== 'object' || typeof c.query !== 'function') return undefined;
  return typeof c.connect === 'function' && typeof c.totalCount === 'number' ? 'pg-pool' : 'pg-client';
}

/** The most connections the client opens (its `max` option; both drivers default to 10), 1 for a lone Client. */
export function postgresClientSize(client: unknown, kind: PostgresClientKind): number {
  if (kind === 'pg-client') return 1;
  return Number((client as { options?: { max?: number } }).options?.max ?? 10);
}

const rowsOfPg = (result: PgResult | PgResult[]) =>
  (Array.isArray(result) ? result : [result]).map((r) => r.rows ?? []);

/**
 * Sessions on a Pool: a pooled connection per transaction. While a client is lent, pg-pool stops listening for its
 * 'error' (a connection the database dropped: a restart, pg_terminate_backend), and an 'error' nobody listens to
 * ends the process. So the session listens while it holds the client: the failure fails the transaction (the
 * failure policy answers), and the client goes back as broken, so the pool destroys it and opens a new one.
 */
function poolSessions(pool: PgPool): () => Promise<SqlSession> {
  return async () => {
    const connection = await pool.connect();
    let failure: Error | undefined;
    const onError = (error: Error) => {
      failure = error;
    };
    connection.on?.('error', onError);
    return {
      run: async (text) => {
        if (failure !== undefined) throw failure;
        return rowsOfPg(await connection.query(text));
      },
      release: (broken) => {
        // release() puts the pool's own listener back first, so no 'error' goes unheard in between.
        connection.release(failure ?? (broken ? true : undefined));
        connection.removeListener?.('error', onError);
      },
    };
  };
}

/** Sessions on one Client: transactions take turns, since a connection holds one transaction at a time. */
function clientSessions(client: PgQueryable): () => Promise<SqlSession> {
  let turn: Promise<void> = Promise.resolve();
  return async () => {
    let done!: () => void;
    const previous = turn;
    turn = new Promise<void>((resolve) => {
      done = resolve;
    });
    await previous;
    return { run: async (text) => rowsOfPg(await client.query(text)), release: () => done() };
  };
}

/**
 * Whether a postgres.js failure may have closed the connection: anything but an error PostgreSQL answered with
 * (a five-character SQLSTATE) outside the connection (08) and shutdown (57P) classes.
 */
function connectionLost(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || /^(08|57P)/.test(code);
}

/**
 * Sessions on postgres.js: a reserved connection per transaction, statements sent as one simple query. Once its
 * connection closed, a reserved connection must not be used again nor released: postgres.js 3.4 then writes to a
 * socket it has already dropped (a TypeError thrown from a timer, which ends the process), and a release would put
 * the dead connection back among the open ones. postgres.js takes a closed connection back itself and reconnects
 * it when needed, so after such a failure the session sends nothing more (no ROLLBACK) and does not release.
 */
function postgresJsSessions(sql: PostgresJsSql): () => Promise<SqlSession> {
  return async () => {
    const reserved = await sql.reserve();
    let lost: unknown;
    return {
      run: async (text) => {
        if (lost !== undefined) throw lost;
        try {
          const result = await reserved.unsafe(text);
          return typeof (result as PostgresJsResult).command === 'string'
            ? [result as PostgresJsResult]
            : (result as PostgresJsResult[]);
        } catch (error) {
          if (connectionLost(error)) lost = error;
          throw error;
        }
      },
      release: () => {
        if (lost === undefined) reserved.release();
      },
    };
  };
}

/** The sessions for a client of `kind`. */
export function postgresSessions(client: unknown, kind: PostgresClientKind): () => Promise<SqlSession> {
  if (kind === 'postgres-js') return postgresJsSessions(client as PostgresJsSql);
  return kind === 'pg-pool' ? poolSessions(client as PgPool) : clientSessions(client as PgQueryable);
}
