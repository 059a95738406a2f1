/** One `sluice` subcommand. Each lives in `src/cli/commands/<name>.ts` and is listed in `commands/index.ts`. */
export interface Command {
  readonly name: string;
  /** One line for `sluice --help`. */
  readonly summary: string;
  /** The full `sluice <name> --help` text. */
  readonly help: string;
  /** Runs the command with the arguments after its name; resolves to the process exit code. */
  run(argv: readonly string[], io: CommandIo): Promise<number>;
}

/** Where a command writes, so tests can capture it. */
export interface CommandIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}
