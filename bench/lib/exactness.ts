/**
 * The stores bench's exactness run: 8 processes × 250 concurrent decisions on one key with a limit of 100, for each
 * library on one database — how many were admitted in all (exact: 100) and how many failed.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { DatabaseName } from './store-sides.js';

/** Admitted and failed decisions of the 8 processes together. */
export interface Exactness {
  admitted: number;
  failed: number;
}

/** The child script beside this file (compiled .js under `npm run bench`, .ts through tsx). */
const CHILD = fileURLToPath(
  new URL(`./exact-child${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url),
);

/** A child process that answers one line per line sent. */
function lineChild(args: readonly string[]) {
  const child = spawn(process.execPath, [...process.execArgv, CHILD, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    send: (line: string) => child.stdin.write(`${line}\n`),
    next: async () => {
      const { value, done } = await lines.next();
      if (done) throw new Error(`a bench child exited (${child.exitCode ?? child.signalCode})`);
      return String(value);
    },
    stop: () => {
      child.stdin.end('exit\n');
      return new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

/** Runs 8 children on `database` (tables already made), one key per library; each library's totals. */
export async function exactness(database: DatabaseName, dir: string): Promise<Record<'sluice' | 'rlf', Exactness>> {
  const children = Array.from({ length: 8 }, () => lineChild([database, dir]));
  try {
    for (const child of children) if ((await child.next()) !== 'ready') throw new Error('a bench child did not start');
    const totals = { sluice: { admitted: 0, failed: 0 }, rlf: { admitted: 0, failed: 0 } };
    for (const library of ['sluice', 'rlf'] as const) {
      const key = `exact-${library}-${Date.now()}`;
      for (const child of children) child.send(`go ${library} ${key}`);
      for (const child of children) {
        const [admitted, failed] = (await child.next()).split(' ').map(Number);
        totals[library].admitted += admitted ?? 0;
        totals[library].failed += failed ?? 0;
      }
    }
    return totals;
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}
