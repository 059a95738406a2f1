/** `sluice validate`: check rule files and print every problem with its file, line and code. */
import { parseArgs } from 'node:util';
import { loadRules } from 'sluice/rules';
import { formatIssues } from '../../index.js';
import type { Command } from '../command.js';

const HELP = `usage: sluice validate <config>... [--json]

Checks rule files (YAML or JSON; files or directories, as sluice serve --config takes them) and lists
every problem at once as file:line:column CODE message. Exits 0 when the rules are valid, 1 when they
are not, 2 on bad usage.

options:
  --json      print {"ok", "files", "domains"} or {"ok": false, "issues": [...]} as JSON
  -h, --help  show this help

examples:
  sluice validate ./ratelimit-config
  sluice validate rules.yaml more-rules.yaml
`;

/** `sluice validate`. */
export const validateCommand: Command = {
  name: 'validate',
  summary: 'check rule files and list every problem with file:line (exit 1 when invalid)',
  help: HELP,
  async run(argv, io) {
    let parsed: ReturnType<typeof parseArgs<{ options: { json: { type: 'boolean' } }; allowPositionals: true }>>;
    try {
      parsed = parseArgs({
        args: [...argv],
        strict: true,
        allowPositionals: true,
        options: { json: { type: 'boolean' } },
      });
    } catch (error) {
      io.err(`sluice validate: ${(error as Error).message}\n\n${HELP}`);
      return 2;
    }
    const paths = parsed.positionals;
    if (paths.length === 0) {
      io.err(`sluice validate: give at least one config file or directory\n\n${HELP}`);
      return 2;
    }
    const result = await loadRules(paths);
    if (parsed.values.json === true) {
      io.out(
        JSON.stringify(
          result.ok
            ? { ok: true, files: result.files, domains: [...result.ruleSet.domains.keys()] }
            : { ok: false, files: result.files, issues: result.issues },
        ),
      );
      return result.ok ? 0 : 1;
    }
    if (!result.ok) {
      io.err(formatIssues(result.issues));
      io.err(`${result.issues.length} problem${result.issues.length === 1 ? '' : 's'} in ${paths.join(', ')}`);
      return 1;
    }
    const domains = [...result.ruleSet.domains.keys()];
    io.out(
      `ok: ${domains.length} domain${domains.length === 1 ? '' : 's'} (${domains.join(', ')}) in ${result.files.length} file${result.files.length === 1 ? '' : 's'}`,
    );
    return 0;
  },
};
