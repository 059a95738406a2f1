/**
 * The usage reader alone (issue 40): `createUsageTap` over 200-event streams as the providers send them
 * — OpenAI Chat Completions with `stream_options.include_usage` (`"usage":null` in every chunk), OpenAI
 * Responses, Anthropic Messages — and the minimal chunks of the tokens bench's upstream, 16 events a
 * chunk. CPU microseconds per stream, the median of alternating rounds.
 *
 *   npm run bench -- tokens-reader
 *   BENCH_TOKENS_BASELINE=/path/to/other/checkout npm run bench -- tokens-reader   # + that checkout's reader
 *                                  # (from its own compiled .bench-out), alternating with this one
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createUsageTap } from '../packages/sluice/src/llm/usage-tap.js';
import { fmt, table } from './lib/measure.js';

type CreateTap = typeof createUsageTap;
const EVENTS = 200;
const ROUNDS = 7;
const STREAMS_A_ROUND = 2000;
const BASELINE = process.env.BENCH_TOKENS_BASELINE;

// Generated text as it comes: words, punctuation, a newline, quotes, non-ASCII.
const WORDS = [
  'The',
  ' quick',
  ' brown',
  ' fox',
  ' jumps',
  ' over',
  ' the',
  ' lazy',
  ' dog',
  '.',
  ' Ça',
  ' va',
  '\n',
  ' "q"',
];
const sse = (data: unknown, name?: string) => `${name ? `event: ${name}\n` : ''}data: ${JSON.stringify(data)}\n\n`;

function openaiChat(): string {
  const base = {
    id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
    object: 'chat.completion.chunk',
    created: 1741569952,
    model: 'gpt-4o-2024-08-06',
    service_tier: 'default',
    system_fingerprint: 'fp_f9f4fb6dbf',
  };
  const chunk = (delta: unknown, finish: string | null = null) =>
    sse({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null });
  let s = chunk({ role: 'assistant', content: '', refusal: null });
  for (let i = 0; i < EVENTS; i++) s += chunk({ content: WORDS[i % WORDS.length] });
  s += chunk({}, 'stop');
  s += sse({ ...base, choices: [], usage: { prompt_tokens: 40, completion_tokens: EVENTS, total_tokens: 240 } });
  return `${s}data: [DONE]\n\n`;
}

function openaiResponses(): string {
  const created = { id: 'resp_1', object: 'response', status: 'in_progress', usage: null };
  let s = sse({ type: 'response.created', sequence_number: 0, response: created }, 'response.created');
  for (let i = 0; i < EVENTS; i++) {
    const delta = { item_id: 'msg_1', output_index: 0, content_index: 0, delta: WORDS[i % WORDS.length] };
    s += sse({ type: 'response.output_text.delta', sequence_number: i + 1, ...delta }, 'response.output_text.delta');
  }
  const usage = { input_tokens: 40, output_tokens: EVENTS, total_tokens: 240 };
  const done = { ...created, status: 'completed', usage };
  return s + sse({ type: 'response.completed', sequence_number: EVENTS + 1, response: done }, 'response.completed');
}

function anthropicMessages(): string {
  const usage = { input_tokens: 40, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 };
  const message = { id: 'msg_01', type: 'message', role: 'assistant', content: [], model: 'claude-sonnet-4', usage };
  let s = sse({ type: 'message_start', message }, 'message_start');
  s += sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start');
  s += sse({ type: 'ping' }, 'ping');
  for (let i = 0; i < EVENTS; i++) {
    const delta = { type: 'text_delta', text: WORDS[i % WORDS.length] };
    s += sse({ type: 'content_block_delta', index: 0, delta }, 'content_block_delta');
  }
  s += sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop');
  const end = { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: EVENTS } };
  return s + sse(end, 'message_delta') + sse({ type: 'message_stop' }, 'message_stop');
}

function minimal(): string {
  const word = 'data: {"choices":[{"index":0,"delta":{"content":"abc "}}]}\n\n';
  const usage = `data: {"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":${EVENTS}}}\n\n`;
  return `${word.repeat(EVENTS)}${usage}data: [DONE]\n\n`;
}

/** The stream in chunks of 16 events, as the tokens bench's upstream writes them. */
function chunked(text: string): Buffer[] {
  const events = text.split(/(?<=\n\n)/);
  const chunks: Buffer[] = [];
  for (let i = 0; i < events.length; i += 16) chunks.push(Buffer.from(events.slice(i, i + 16).join('')));
  return chunks;
}

/** CPU µs per stream read by `create`'s tap, over one round. */
function round(create: CreateTap, provider: 'openai' | 'anthropic', chunks: Buffer[]): number {
  const start = process.cpuUsage();
  for (let i = 0; i < STREAMS_A_ROUND; i++) {
    const tap = create({ provider });
    for (const chunk of chunks) tap.push(chunk);
    if (tap.end().usage === undefined) throw new Error('the reader found no usage');
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / STREAMS_A_ROUND;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function baselineTap(): Promise<CreateTap | undefined> {
  if (BASELINE === undefined) return undefined;
  const file = resolve(BASELINE, '.bench-out/packages/sluice/src/llm/usage-tap.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run bench in ${BASELINE} once`);
  return ((await import(pathToFileURL(file).href)) as { createUsageTap: CreateTap }).createUsageTap;
}

async function main(): Promise<void> {
  const other = await baselineTap();
  const streams = [
    ['OpenAI Chat Completions (include_usage)', 'openai', openaiChat()],
    ['OpenAI Responses', 'openai', openaiResponses()],
    ['Anthropic Messages', 'anthropic', anthropicMessages()],
    ["the tokens bench's minimal chunks", 'openai', minimal()],
  ] as const;
  const rows: string[][] = [];
  for (const [name, provider, text] of streams) {
    const chunks = chunked(text);
    const mine: number[] = [];
    const theirs: number[] = [];
    round(createUsageTap, provider, chunks); // warm-up
    if (other) round(other, provider, chunks);
    for (let r = 0; r < ROUNDS; r++) {
      mine.push(round(createUsageTap, provider, chunks));
      if (other) theirs.push(round(other, provider, chunks));
    }
    const row = [name, fmt(Buffer.byteLength(text)), fmt(median(mine), 1)];
    if (other) row.push(fmt(median(theirs), 1), fmt(median(theirs) / median(mine), 1));
    rows.push(row);
  }
  console.log(
    `createUsageTap over ${EVENTS}-event streams, 16 events a chunk: CPU µs per stream, median of ${ROUNDS} rounds`,
  );
  const head = ['stream', 'bytes', 'µs per stream'];
  if (other) head.push(`baseline ${BASELINE} µs`, 'baseline / this');
  console.log(table(head, rows));
}

await main();
