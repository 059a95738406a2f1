/**
 * A child process of the stores bench's exactness run (`<database> <dir>`): opens both libraries with a limit of 100
 * an hour and, on each `go <sluice|rlf> <key>` line, sends 250 concurrent decisions on one key and prints how many
 * were admitted and how many failed.
 */
import { createInterface } from 'node:readline';
import { type DatabaseName, openSides } from './store-sides.js';

const [database, dir] = process.argv.slice(2) as [DatabaseName, string];
// A pool of 8 each: eight children stay within PostgreSQL's default 100 connections.
const sides = await openSides(database, { points: 100, poolSize: 8, dir });
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const [command, library, key] = line.split(' ') as [string, 'sluice' | 'rlf', string];
  if (command !== 'go') break;
  const answers = await Promise.allSettled(Array.from({ length: 250 }, () => sides[library].decide(key)));
  const admitted = answers.filter((a) => a.status === 'fulfilled' && a.value).length;
  const failed = answers.filter((a) => a.status === 'rejected').length;
  process.stdout.write(`${admitted} ${failed}\n`);
}
await sides.sluice.close();
await sides.close();
process.exit(0);
