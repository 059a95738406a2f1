/**
 * The connections sluice/mysql decides on, from what the user passes: a `mysql2` pool (promise or callback) or one
 * connection — each as sessions that run a transaction's statements and give back each statement's rows.
 */

/** A connection held for one transaction: runs statements (in one round trip where the pool allows several). */
export interface MySqlSession {
  run(statements: readonly string[]): Promise<unknown[]>;
  /** True the first time sluice gets this connection (to set its session variables once). */
  readonly fresh: boolean;
  /** Back to the pool; `broken`: the connection is in an unknown state and is dropped. */
  release(broken: boolean): void;
}

type Callback = (error: Error | null, result?: unknown) => void;
/** A mysql2 core connection, as far as sluice uses it. */
interface CoreConnection {
  query(sql: string, callback: Callback): unknown;
  release?(): void;
  destroy?(): void;
  config?: { multipleStatements?: boolean };
}
/** A mysql2 core pool, as far as sluice uses it. */
interface CorePool {
  getConnection(callback: (error: Error | null, connection: CoreConnection) => void): void;
  config?: { connectionLimit?: number; connectionConfig?: { multipleStatements?: boolean } };
}

/** The mysql2 core object behind what the user passed: a promise pool's `.pool`, a promise connection's `.connection`. */
function coreOf(client: unknown): CorePool | CoreConnection | undefined {
  if (client === null || typeof client !== 'object') return undefined;
  const c = client as { pool?: unknown; connection?: unknown; getConnection?: unknown; query?: unknown };
  if (c.pool !== null && typeof c.pool === 'object' && typeof (c.pool as CorePool).getConnection === 'function')
    return c.pool as CorePool;
  if (typeof c.getConnection === 'function') return c as CorePool;
  if (
    c.connection !== null &&
    typeof c.connection === 'object' &&
    typeof (c.connection as CoreConnection).query === 'function'
  )
    return c.connection as CoreConnection;
  return typeof c.query === 'function' ? (c as CoreConnection) : undefined;
}

/**
 * Runs statements on a core connection, joined in one query when it allows several, else one after another; gives
 * back each statement's result (rows for a SELECT, mysql2's result header for anything else).
 */
async function runOn(connection: CoreConnection, multiple: boolean, statements: readonly string[]) {
  const query = (sql: string) =>
    new Promise<unknown>((resolve, reject) => {
      connection.query(sql, (error, result) => (error ? reject(error) : resolve(result)));
    });
  if (multiple && statements.length > 1) {
    return (await query(statements.join(';\n'))) as unknown[];
  }
  const out: unknown[] = [];
  for (const sql of statements) out.push(await query(sql));
  return out;
}

/** What sluice/mysql makes of a client: its sessions and how many transactions may run at once. */
export interface MySqlClient {
  session(): Promise<MySqlSession>;
  /** The pool's connection limit (mysql2's default 10), 1 for a lone connection. */
  readonly size: number;
}

/** Sessions on a pool: a pooled connection per transaction. */
function poolClient(pool: CorePool): MySqlClient {
  const multiple = pool.config?.connectionConfig?.multipleStatements === true;
  const seen = new WeakSet<CoreConnection>();
  return {
    size: Number(pool.config?.connectionLimit ?? 10),
    session: () =>
      new Promise((resolve, reject) => {
        pool.getConnection((error, connection) => {
          if (error) return reject(error);
          const fresh = !seen.has(connection);
          seen.add(connection);
          resolve({
            fresh,
            run: (statements) => runOn(connection, multiple, statements),
            release: (broken) => (broken ? connection.destroy?.() : connection.release?.()),
          });
        });
      }),
  };
}

/** Sessions on one connection: transactions take turns, since a connection holds one transaction at a time. */
function connectionClient(connection: CoreConnection): MySqlClient {
  const multiple = connection.config?.multipleStatements === true;
  let turn: Promise<void> = Promise.resolve();
  let fresh = true;
  return {
    size: 1,
    async session() {
      let done!: () => void;
      const previous = turn;
      turn = new Promise<void>((resolve) => {
        done = resolve;
      });
      await previous;
      const first = fresh;
      fresh = false;
      return { fresh: first, run: (statements) => runOn(connection, multiple, statements), release: () => done() };
    },
  };
}

/** The sessions for a mysql2 pool or connection (promise or callback API), or undefined for anything else. */
export function mySqlClient(client: unknown): MySqlClient | undefined {
  const core = coreOf(client);
  if (core === undefined) return undefined;
  return 'getConnection' in core ? poolClient(core) : connectionClient(core);
}
