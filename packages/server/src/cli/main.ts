#!/usr/bin/env node
/** The `sluice` executable: picks the subcommand, runs it, and exits with its status. */
import type { CommandIo } from './command.js';
import { commands } from './commands/index.js';
import { packageVersion } from './version.js';

const io: CommandIo = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
};

function usage(): string {
  const width = Math.max(0, ...commands.map((c) => c.name.length));
  return [
    'usage: sluice <command> [options]',
    '',
    'commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'sluice <command> --help' for a command's options; 'sluice --version' prints the version.",
  ].join('\n');
}

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(usage());
    return name === undefined ? 1 : 0;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    io.out(`sluice ${packageVersion()}`);
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (command === undefined) {
    io.err(`sluice: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(command.help);
    return 0;
  }
  return command.run(rest, io);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    io.err(`sluice: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
