/** The list of `sluice` subcommands. */
import type { Command } from '../command.js';
import { benchCommand } from './bench.js';
import { checkCommand } from './check.js';
import { explainCommand } from './explain.js';
import { replayCommand } from './replay.js';
import { serveCommand } from './serve.js';
import { simulateCommand } from './simulate.js';
import { validateCommand } from './validate.js';

/** Every `sluice` subcommand, in the order `sluice --help` lists them. */
export const commands: readonly Command[] = [
  serveCommand,
  validateCommand,
  checkCommand,
  simulateCommand,
  benchCommand,
  replayCommand,
  explainCommand,
];
