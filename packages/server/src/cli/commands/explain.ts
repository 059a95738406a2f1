/** `sluice explain`: asks a running service (`POST /admin/explain`) what it would decide for a request and why. */
import { parseArgs } from 'node:util';
import { isSluiceError, parseDuration } from 'sluice';
import type { Command } from '../command.js';
import { formatExplanation } from './explain-format.js';

const HELP = `usage: sluice explain --domain D --descriptor K=V[,K=V...] [--descriptor ...] [options]
       sluice explain --json BODY [options]
       sluice explain --http 'METHOD PATH' [--header 'Name: value' ...] [--remote-address IP] [options]

Asks a running sluice service what it would decide for a request now, and why, without counting it:
which rules matched (the walk through nested descriptors, wildcards, the allow and deny lists), every
counter's state, the binding limit and when it resets, and whether shadow mode, unlimited, replaces or
a degraded store decided. Needs the admin API (SLUICE_ADMIN_TOKEN on the service).

exit status: 0 the request would pass, 1 it would be refused, 2 error (an invalid /v1/check item too)

options:
  --url URL              the service's HTTP API (default $SLUICE_URL or http://127.0.0.1:8080)
  --token T              the admin token (default $SLUICE_ADMIN_TOKEN)
  --domain D             the rules' domain (as sent over gRPC or to POST /json)
  --descriptor LIST      one descriptor's entries, key=value pairs separated by commas; repeat for more
  --hits N               hits the request would take (default 1)
  --json BODY            a POST /json body ({"domain","descriptors"}) or a POST /v1/check body ({"checks"})
  --http 'METHOD PATH'   an HTTP request through the gateway's http: rules
  --header 'N: V'        a header of that request; repeat for more
  --remote-address IP    that request's client address (as the gateway resolves it)
  --output text|json     human lines (default) or the service's JSON answer
  --timeout D            give up after this long (default 5s)
  -h, --help             show this help

examples:
  sluice explain --domain api --descriptor user=u1
  sluice explain --http 'GET /v1/items' --header 'x-api-key: k1' --output json
  sluice explain --json '{"checks":[{"key":"user:42","limit":10,"period":"1m"}]}'
`;

class UsageError extends Error {}

interface ExplainFlags {
  domain?: string | undefined;
  descriptor?: string[] | undefined;
  hits?: string | undefined;
  json?: string | undefined;
  http?: string | undefined;
  header?: string[] | undefined;
  'remote-address'?: string | undefined;
}

/** The explain body the flags describe; exactly one form. */
export function explainBodyOf(flags: ExplainFlags): unknown {
  const forms = [flags.domain !== undefined, flags.json !== undefined, flags.http !== undefined].filter(Boolean);
  if (forms.length !== 1) throw new UsageError('give one of --domain (with --descriptor), --json or --http');
  if (flags.json !== undefined) {
    try {
      return JSON.parse(flags.json);
    } catch {
      throw new UsageError('--json: not valid JSON');
    }
  }
  if (flags.http !== undefined) {
    const [method, path, ...rest] = flags.http.trim().split(/\s+/);
    if (method === undefined || path === undefined || rest.length > 0)
      throw new UsageError("--http: expected 'METHOD PATH'");
    const headers: Record<string, string> = {};
    for (const header of flags.header ?? []) {
      const colon = header.indexOf(':');
      if (colon < 1) throw new UsageError(`--header: '${header}' is not 'Name: value'`);
      headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
    }
    const remote = flags['remote-address'];
    return { http: { method, path, headers, ...(remote === undefined ? {} : { remoteAddress: remote }) } };
  }
  const descriptors = (flags.descriptor ?? []).map((text) => ({
    entries: text.split(',').map((pair) => {
      const [key = '', ...value] = pair.split('=');
      if (key === '' || value.length === 0) throw new UsageError(`--descriptor: '${pair}' is not key=value`);
      return { key, value: value.join('=') };
    }),
  }));
  if (descriptors.length === 0) throw new UsageError('--domain needs at least one --descriptor');
  const hits = flags.hits === undefined ? undefined : Number(flags.hits);
  if (hits !== undefined && (!Number.isInteger(hits) || hits < 0))
    throw new UsageError('--hits: expected a whole number');
  return { domain: flags.domain, descriptors, ...(hits === undefined ? {} : { hitsAddend: hits }) };
}

async function ask(
  url: string,
  token: string,
  body: unknown,
  timeoutMs: number,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(new URL('/admin/explain', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  try {
    return { status: res.status, json: JSON.parse(text) };
  } catch {
    return { status: res.status, json: { error: { code: 'ERR_SLUICE_NOT_JSON', message: text.slice(0, 200) } } };
  }
}

/** Each `/v1/check` item the service found invalid, as `checks[i] is invalid: CODE message`. */
function invalidChecks(answer: Record<string, unknown>): string[] {
  const checks = Array.isArray(answer.checks)
    ? (answer.checks as { error?: { code?: string; message?: string } }[])
    : [];
  return checks.flatMap((c, i) =>
    c?.error === undefined ? [] : [`checks[${i}] is invalid: ${c.error.code ?? ''} ${c.error.message ?? ''}`],
  );
}

/** `sluice explain`. */
export const explainCommand: Command = {
  name: 'explain',
  summary: 'ask a running service what it would decide for a request, and why (nothing is counted)',
  help: HELP,
  async run(argv, io) {
    try {
      const { values } = parseArgs({
        args: [...argv],
        strict: true,
        options: {
          url: { type: 'string' },
          token: { type: 'string' },
          domain: { type: 'string' },
          descriptor: { type: 'string', multiple: true },
          hits: { type: 'string' },
          json: { type: 'string' },
          http: { type: 'string' },
          header: { type: 'string', multiple: true },
          'remote-address': { type: 'string' },
          output: { type: 'string' },
          timeout: { type: 'string' },
          help: { type: 'boolean', short: 'h' },
        },
      });
      if (values.help === true) {
        io.out(HELP);
        return 0;
      }
      const output = values.output ?? 'text';
      if (output !== 'text' && output !== 'json') throw new UsageError('--output: expected text or json');
      const token = values.token ?? process.env.SLUICE_ADMIN_TOKEN;
      if (token === undefined || token === '')
        throw new UsageError('--token (or $SLUICE_ADMIN_TOKEN): the admin token is needed');
      const body = explainBodyOf(values);
      const url = values.url ?? process.env.SLUICE_URL ?? 'http://127.0.0.1:8080';
      const timeoutMs = parseDuration(values.timeout ?? '5s', '--timeout');
      const answer = await ask(url, token, body, timeoutMs);
      if (answer.status !== 200) {
        const error = (answer.json as { error?: { code?: string; message?: string } }).error;
        io.err(`sluice explain: ${answer.status} ${error?.code ?? ''}: ${error?.message ?? ''}\n`);
        return 2;
      }
      const json = answer.json as Record<string, unknown>;
      io.out(output === 'json' ? `${JSON.stringify(json, null, 2)}\n` : formatExplanation(json));
      // An invalid item is not a request that would pass: the service would refuse it, so it is an error.
      const invalid = invalidChecks(json);
      for (const line of invalid) io.err(`sluice explain: ${line}\n`);
      if (invalid.length > 0) return 2;
      return json.overallCode === 'OVER_LIMIT' ? 1 : 0;
    } catch (error) {
      if (error instanceof UsageError || isSluiceError(error)) {
        io.err(`sluice explain: ${(error as Error).message}\n\n${HELP}`);
        return 2;
      }
      io.err(`sluice explain: ${(error as Error).message}\n`);
      return 2;
    }
  },
};
