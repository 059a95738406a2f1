import type { Command } from '../command.js';
import { benchCommand } from './bench.js';
import { serveCommand } from './serve.js';
import { simulateCommand } from './simulate.js';

/** Every `sluice` subcommand, in the order `sluice --help` lists them. */
export const commands: readonly Command[] = [serveCommand, simulateCommand, benchCommand];
