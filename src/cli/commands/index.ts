import type { Command } from '../command.js';

/** Every `sluice` subcommand, in the order `sluice --help` lists them. */
export const commands: readonly Command[] = [];
