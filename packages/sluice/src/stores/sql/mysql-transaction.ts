/**
 * One group-commit transaction of the MySQL backend: lock every row a batch touches (placeholders for new ones, in a
 * fixed order), read them, run the decisions' steps, write what changed, commit — rolled back on failure.
 */
import type { BatchEntry, BatchRows } from './group-commit.js';
import { runSteps } from './group-commit.js';
import type { MySqlClient } from './mysql-sessions.js';
import { sqlNumber, stateLiteral } from './sql-text.js';

/** What a MySQL transaction needs of its backend. */
export interface MySqlTarget {
  readonly client: MySqlClient;
  /** Quoted table name (backticks). */
  readonly table: string;
  readonly clock: 'database' | 'client';
  /** innodb_lock_wait_timeout, set once on each fresh connection. */
  readonly lockSeconds: number;
  /** Answers a decision only once its commit is on disk (false: once its writes are sent). */
  readonly durable: boolean;
}

/** The database's clock in whole ms since the epoch. */
export const DB_NOW = 'FLOOR(UNIX_TIMESTAMP(SYSDATE(3)) * 1000)';
/** A placeholder row (a key locked before its first write): as good as absent. */
const PLACEHOLDER = "''";

const hexLiteral = (hex: string) => `X'${hex}'`;

/** Begin, lock every id (placeholders for new ones, in a fixed order: no deadlock between decisions), read them. */
function readStatements(table: string, hexes: readonly string[], lockSeconds: number | undefined): string[] {
  const sorted = [...hexes].sort();
  const values = sorted.map((h) => `(${hexLiteral(h)}, ${PLACEHOLDER}, 0)`).join(',');
  return [
    ...(lockSeconds === undefined ? [] : [`SET SESSION innodb_lock_wait_timeout = ${lockSeconds}`]),
    'START TRANSACTION',
    `INSERT INTO ${table} (id, state, expires_at) VALUES ${values} ON DUPLICATE KEY UPDATE id = id`,
    `SELECT HEX(id) AS id, state, expires_at, ${DB_NOW} AS now FROM ${table} WHERE id IN (${sorted.map(hexLiteral).join(',')}) FOR UPDATE`,
  ];
}

/** The rows as the steps left them (each once), the placeholders they left unwritten deleted, and the commit. */
function writeStatements(table: string, rows: BatchRows, placeholders: ReadonlySet<string>): string[] {
  const upserts: string[] = [];
  const deletes: string[] = [];
  for (const hex of new Set([...rows.dirty, ...placeholders])) {
    const row = rows.rows.get(hex);
    if (row !== undefined)
      upserts.push(`(${hexLiteral(hex)}, ${stateLiteral(row.state)}, ${sqlNumber(row.expiresAt)})`);
    else deletes.push(hexLiteral(hex));
  }
  const statements: string[] = [];
  if (upserts.length > 0)
    statements.push(
      `INSERT INTO ${table} (id, state, expires_at) VALUES ${upserts.join(',')} ON DUPLICATE KEY UPDATE state = VALUES(state), expires_at = VALUES(expires_at)`,
    );
  if (deletes.length > 0) statements.push(`DELETE FROM ${table} WHERE id IN (${deletes.join(',')})`);
  statements.push('COMMIT');
  return statements;
}

/** The locked rows as the steps see them (a placeholder as absent), which of them are placeholders, and the clock. */
function readRows(read: readonly Record<string, unknown>[]) {
  const rows: BatchRows = { rows: new Map(), dirty: new Set() };
  const placeholders = new Set<string>();
  let dbNow = Number.NaN;
  for (const row of read) {
    const hex = String(row.id).toLowerCase();
    dbNow = Number(row.now);
    if (String(row.state) === '') placeholders.add(hex);
    else rows.rows.set(hex, { state: String(row.state), expiresAt: Number(row.expires_at) });
  }
  return { rows, placeholders, dbNow };
}

/**
 * One transaction for a batch: lock and read every row it touches, run the steps, write, commit; rolled back (or
 * the connection dropped) on failure. Not durable: the decisions are answered once the writes are sent, while the
 * commit waits for the log flush (the rows stay locked until it is done, so the next decision on them sees them).
 * `sent.answered` tells the caller whether a failure came after the answers went out.
 */
export async function runTransaction(
  target: MySqlTarget,
  entries: readonly BatchEntry[],
  hexes: readonly string[],
  sent: { answered: boolean },
): Promise<void> {
  const { client, table, clock, durable } = target;
  const session = await client.session();
  try {
    const results = await session.run(readStatements(table, hexes, session.fresh ? target.lockSeconds : undefined));
    const read = readRows((results[results.length - 1] ?? []) as Record<string, unknown>[]);
    const at = clock === 'database' && Number.isFinite(read.dbNow) ? () => read.dbNow : (e: BatchEntry) => e.nowMs;
    const outcomes = runSteps(entries, read.rows, at);
    const answer = () =>
      outcomes.forEach((o, i) => {
        if (o.ok) entries[i]?.resolve(o.value);
        else entries[i]?.reject(o.error);
      });
    const committed = session.run(writeStatements(table, read.rows, read.placeholders));
    if (!durable) {
      answer();
      sent.answered = true;
    }
    await committed;
    session.release(false);
    if (durable) answer();
  } catch (error) {
    const broken = await session.run(['ROLLBACK']).then(
      () => false,
      () => true,
    );
    session.release(broken);
    throw error;
  }
}
