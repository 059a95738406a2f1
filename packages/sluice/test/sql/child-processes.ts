/** Child processes speaking lines on stdin/stdout, for the SQL stores' multi-process tests. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** A child: send it a line, read its next line. */
export interface LineChild {
  readonly process: ChildProcess;
  send(line: string): void;
  next(): Promise<string>;
}

/** Starts `node --import tsx <script> ...args`. */
export function spawnLineChild(script: string, args: readonly string[]): LineChild {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const queue: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  // A child that dies answers every pending and later read with a line saying so, instead of hanging the test.
  child.once('exit', (code) => {
    for (const w of waiting.splice(0)) w(`exited ${code}`);
    queue.push(`exited ${code}`);
  });
  createInterface({ input: child.stdout as NonNullable<typeof child.stdout> }).on('line', (line) => {
    const w = waiting.shift();
    if (w) w(line);
    else queue.push(line);
  });
  return {
    process: child,
    send: (line) => child.stdin?.write(`${line}\n`),
    next: () => {
      const line = queue.shift();
      return line === undefined ? new Promise((resolve) => waiting.push(resolve)) : Promise.resolve(line);
    },
  };
}

/** Tells children to leave and stops (by its own PID) any that has not within 10 s: a test never hangs a run. */
export async function stopLineChildren(children: readonly LineChild[]): Promise<void> {
  for (const child of children) {
    child.send('exit');
    child.process.stdin?.end();
  }
  await Promise.all(
    children.map(
      (c) =>
        new Promise((resolve) => {
          if (c.process.exitCode !== null) return resolve(undefined);
          const timer = setTimeout(() => c.process.kill('SIGKILL'), 10_000);
          c.process.once('exit', () => {
            clearTimeout(timer);
            resolve(undefined);
          });
        }),
    ),
  );
}
