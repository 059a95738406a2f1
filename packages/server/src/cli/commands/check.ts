/** `sluice check`: asks a running service whether a request may pass (its rules, or /v1/check with a policy), for scripts. */
import { parseArgs } from 'node:util';
import { isSluiceError, parseDuration } from 'sluice';
import { createRlsClient } from '../../index.js';
import type { Command } from '../command.js';

const HELP = `usage: sluice check --domain D --descriptor K=V[,K=V...] [--descriptor ...] [options]
       sluice check --key K --limit N --period D [--algorithm A] [--burst B] [--cost C] [options]

Asks a running sluice service whether a request may pass, for shell scripts. The first form asks the
configured rules (POST /json, or gRPC with --grpc); the second asks POST /v1/check with its own policy.
Every call counts, like a real request (use --hits 0 or --cost 0 to look without counting).

exit status: 0 OK, 1 OVER_LIMIT, 2 error (bad usage, service unreachable, request refused)

options:
  --url URL            the service's HTTP API (default $SLUICE_URL or http://127.0.0.1:8080)
  --grpc HOST:PORT     ask over gRPC (envoy.service.ratelimit.v3) instead; rules form only
  --domain D           the rules' domain
  --descriptor LIST    one descriptor's entries, key=value pairs separated by commas; repeat for more
  --hits N             hits the request takes (default 1)
  --key K --limit N --period D --algorithm A --burst B --cost C
                       a /v1/check item
  --timeout D          give up after this long (default 5s)
  --json               print the service's answer as JSON
  -q, --quiet          print nothing; the exit status says it all
  -h, --help           show this help

examples:
  sluice check --domain example --descriptor remote_address=10.0.0.1 && echo allowed
  sluice check --key user:42 --limit 10 --period 1m --algorithm sliding-window
`;

class UsageError extends Error {}

function descriptorOf(text: string): { entries: { key: string; value: string }[] } {
  const entries = text.split(',').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--descriptor: '${pair}' is not key=value`);
    return { key: pair.slice(0, eq), value: pair.slice(eq + 1) };
  });
  return { entries };
}

function num(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`${name}: expected a whole number`);
  return n;
}

async function post(
  url: string,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(new URL(path, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: keep the text for the error message.
  }
  return { status: res.status, body: parsed };
}

/** The flags of `sluice check`. */
const OPTIONS = {
  url: { type: 'string' },
  grpc: { type: 'string' },
  domain: { type: 'string' },
  descriptor: { type: 'string', multiple: true },
  hits: { type: 'string' },
  key: { type: 'string' },
  limit: { type: 'string' },
  period: { type: 'string' },
  algorithm: { type: 'string' },
  burst: { type: 'string' },
  cost: { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean', short: 'q' },
} as const;

type CheckValues = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true }>>['values'];

/** What a check needs besides its flags: where, how long, and how to print. */
interface CheckRun {
  readonly values: CheckValues;
  readonly url: string;
  readonly timeoutMs: number;
  say(text: string): void;
}

/** `sluice check`. */
export const checkCommand: Command = {
  name: 'check',
  summary: 'ask a running service whether a request may pass (exit 0 OK, 1 OVER_LIMIT)',
  help: HELP,
  async run(argv, io) {
    let values: CheckValues;
    try {
      values = parseArgs({ args: [...argv], strict: true, options: OPTIONS }).values;
    } catch (error) {
      io.err(`sluice check: ${(error as Error).message}\n\n${HELP}`);
      return 2;
    }
    const say = (text: string) => {
      if (values.quiet !== true) io.out(text);
    };
    const url = values.url ?? process.env.SLUICE_URL ?? 'http://127.0.0.1:8080';
    try {
      const run: CheckRun = { values, url, timeoutMs: parseDuration(values.timeout ?? '5s', '--timeout'), say };
      return values.key !== undefined ? await checkKey(run) : await checkDescriptors(run);
    } catch (error) {
      if (error instanceof UsageError || isSluiceError(error, 'ERR_SLUICE_INVALID_DURATION')) {
        io.err(`sluice check: ${error.message}\n\n${HELP}`);
        return 2;
      }
      const cause = (error as Error & { cause?: Error }).cause;
      io.err(`sluice check: ${(error as Error).message}${cause?.message ? ` (${cause.message})` : ''}`);
      return 2;
    }
  },
};

/** `--key --limit --period`: one item of /v1/check. */
async function checkKey({ values, url, timeoutMs, say }: CheckRun): Promise<number> {
  if (values.domain !== undefined || values.descriptor !== undefined || values.grpc !== undefined) {
    throw new UsageError('--key asks /v1/check: do not mix it with --domain, --descriptor or --grpc');
  }
  const item: Record<string, unknown> = {
    key: values.key,
    limit: num(values.limit, '--limit'),
    period: values.period,
  };
  if (values.algorithm !== undefined) item.algorithm = values.algorithm;
  if (values.burst !== undefined) item.burst = num(values.burst, '--burst');
  if (values.cost !== undefined) item.cost = num(values.cost, '--cost');
  const res = await post(url, '/v1/check', { checks: [item] }, timeoutMs);
  const result = (res.body as { results?: Record<string, unknown>[] }).results?.[0];
  if (res.status !== 200 || result === undefined)
    throw new Error(`the service answered ${res.status}: ${JSON.stringify(res.body)}`);
  if ('error' in result) {
    say(JSON.stringify(result));
    return 2;
  }
  if (values.json === true) say(JSON.stringify(result));
  else {
    say(
      `${result.allowed ? 'OK' : 'OVER_LIMIT'} remaining ${String(result.remaining)} of ${String(result.limit)}${result.allowed ? '' : `, retry in ${result.retryAfterMs === null ? 'never' : `${Math.ceil(Number(result.retryAfterMs) / 1000)}s`}`}`,
    );
  }
  return result.allowed ? 0 : 1;
}

/** `--domain --descriptor`: envoy's question, over gRPC (`--grpc`) or `/json`. */
async function checkDescriptors(run: CheckRun): Promise<number> {
  const { values, url, timeoutMs, say } = run;
  if (values.domain === undefined || values.descriptor === undefined) {
    throw new UsageError('give --domain and at least one --descriptor (or --key/--limit/--period)');
  }
  const request: Record<string, unknown> = {
    domain: values.domain,
    descriptors: values.descriptor.map(descriptorOf),
  };
  const hits = num(values.hits, '--hits');
  let response: Record<string, unknown>;
  if (values.grpc !== undefined) {
    const client = createRlsClient(values.grpc);
    try {
      // Zero hits is said per descriptor: a request-level 0 means 1 in the RLS protocol.
      if (hits === 0)
        request.descriptors = (request.descriptors as object[]).map((d) => ({ ...d, hitsAddend: { value: 0 } }));
      else if (hits !== undefined) request.hitsAddend = hits;
      response = (await client.shouldRateLimit(request, timeoutMs)) as Record<string, unknown>;
    } finally {
      client.close();
    }
  } else {
    if (hits === 0) request.descriptors = (request.descriptors as object[]).map((d) => ({ ...d, hits_addend: 0 }));
    else if (hits !== undefined) request.hits_addend = hits;
    const res = await post(url, '/json', request, timeoutMs);
    if (res.status !== 200 && res.status !== 429) {
      throw new Error(`the service answered ${res.status}: ${JSON.stringify(res.body)}`);
    }
    response = res.body as Record<string, unknown>;
  }
  const overall = String(response.overallCode);
  say(values.json === true ? JSON.stringify(response) : describeResponse(overall, response, values.descriptor));
  return overall === 'OVER_LIMIT' ? 1 : overall === 'OK' ? 0 : 2;
}

/** The overall code, then a line per descriptor: its code, its limit and what remains. */
function describeResponse(overall: string, response: Record<string, unknown>, descriptors: readonly string[]): string {
  const statuses = (response.statuses ?? []) as {
    code?: string;
    currentLimit?: { name?: string; requestsPerUnit?: number; unit?: string } | null;
    limitRemaining?: number;
  }[];
  const lines = statuses.map((s, i) => {
    const limit = s.currentLimit;
    const what = limit
      ? `${limit.requestsPerUnit ?? 0}/${String(limit.unit).toLowerCase()}${limit.name ? ` (${limit.name})` : ''}, remaining ${s.limitRemaining ?? 0}`
      : 'no limit';
    return `  ${descriptors[i]}: ${s.code} ${what}`;
  });
  return [overall, ...lines].join('\n');
}
