// Differential test of the streamed-usage reader: over random event mixes split anywhere, the byte reader
// (templates, the byte scanner, the parse only when needed) learns what a plain reader learns by decoding
// the whole stream and JSON.parse'ing every event: the same usage, generated characters and malformed count.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { applyStreamEvent, emptyUsageState, type UsageState } from './provider-usage.js';
import { createSseUsageReader } from './sse-usage-reader.js';
import type { LlmProvider } from './usage.js';
import { createUsageTap } from './usage-tap.js';

/** The plain reader: the whole stream decoded, its lines split, every event parsed. */
function reference(bytes: Uint8Array, provider: LlmProvider) {
  const state = emptyUsageState();
  let malformed = 0;
  let data: string[] = [];
  const dispatch = () => {
    const text = data.join('\n');
    data = [];
    if (text === '' || text === '[DONE]') return;
    try {
      applyStreamEvent(state, provider, JSON.parse(text));
    } catch {
      malformed++;
    }
  };
  for (const line of new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes).split(/\r\n|\r|\n/)) {
    if (line === '') dispatch();
    else if (line.startsWith('data:')) data.push(line.slice(line[5] === ' ' ? 6 : 5));
  }
  dispatch();
  return summary(state, malformed);
}

const summary = (state: UsageState, malformed: number) => ({
  producedChars: state.producedChars,
  inputTokens: state.inputTokens,
  outputTokens: state.outputTokens,
  final: state.final,
  invalid: state.invalid?.code,
  malformed,
});

/** The byte reader, fed `bytes` cut at `cuts`; each chunk's memory is overwritten once pushed. */
function fast(bytes: Uint8Array, cuts: number[], provider: LlmProvider) {
  const state = emptyUsageState();
  const reader = createSseUsageReader(provider, 256 * 1024, state);
  const points = [...new Set([0, ...cuts.map((c) => Math.min(c, bytes.length)), bytes.length])].sort((a, b) => a - b);
  for (let i = 1; i < points.length; i++) {
    const chunk = Buffer.from(bytes.subarray(points[i - 1], points[i]));
    reader.push(chunk);
    chunk.fill(0x22); // the caller may reuse its chunk once push returns
  }
  reader.end();
  return summary(state, reader.malformedEvents);
}

// Text a model might send: escapes, quotes, astral characters, line separators, JSON-looking text.
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.constantFrom('', '"', '\\', '\n', '\u0000', 'é', '😀', '\u2028', '\ud800', 'content":"x', '"usage":{}', '0'),
);
const count = fc.oneof(fc.nat(5000), fc.constantFrom(-1, 1.5, 1e12, '12', null));
const counter = fc.oneof(fc.nat(20), fc.constant(0), fc.nat(1_000_000));

/** A Chat Completions chunk around `content`, as OpenAI sends it (every chunk says usage: null). */
const chunkOf = (delta: unknown, id: number, created: number, extra: Record<string, unknown> = { usage: null }) =>
  JSON.stringify({
    id: `chatcmpl-${id}`,
    object: 'chat.completion.chunk',
    created,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: null }],
    ...extra,
  });

const openaiEvent = fc.oneof(
  // An escape around the text (a lone surrogate is written \ud834), sometimes one digit short: not JSON.
  {
    weight: 2,
    arbitrary: fc.tuple(text, fc.boolean()).map(([t, broken]) => {
      const event = chunkOf({ content: t }, 7, 1700, { usage: null, note: '\ud834' });
      return broken ? event.replace('\\ud834', '\\ud83') : event;
    }),
  },
  { weight: 6, arbitrary: fc.tuple(text, counter).map(([t, c]) => chunkOf({ content: t }, 7, 1700 + (c % 2))) },
  fc.tuple(text, text).map(([a, b]) => chunkOf({ role: 'assistant', content: a, refusal: b }, 7, 1700)),
  fc.tuple(text).map(([t]) => chunkOf({ refusal: t }, 7, 1700, {})),
  fc
    .tuple(text, fc.nat(3))
    .map(([t, i]) => chunkOf({ tool_calls: [{ index: i, type: 'function', function: { arguments: t } }] }, 7, 1700)),
  fc.tuple(text, text).map(([a, b]) =>
    JSON.stringify({
      choices: [
        { index: 0, delta: { content: a } },
        { index: 1, delta: { content: b }, logprobs: { content: [{ token: a }] } },
      ],
    }),
  ),
  fc
    .tuple(count, count)
    .map(([p, c]) =>
      JSON.stringify({ choices: [], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: 1 } }),
    ),
  fc.constant(chunkOf({}, 7, 1700)),
  fc
    .tuple(text, counter)
    .map(([t, n]) =>
      JSON.stringify({ type: 'response.output_text.delta', sequence_number: n, item_id: 'msg_1', delta: t }),
    ),
  fc
    .tuple(text, counter)
    .map(([t, n]) => JSON.stringify({ type: 'response.reasoning_text.delta', sequence_number: n, delta: t })),
  fc.tuple(text).map(([t]) => JSON.stringify({ type: 'response.function_call_arguments.delta', delta: t })),
  fc.tuple(text).map(([t]) => JSON.stringify({ type: 'response.output_text.done', text: t })),
  fc.constant(JSON.stringify({ type: 'response.created', response: { id: 'r', usage: null } })),
  fc
    .tuple(count, count)
    .map(([i, o]) =>
      JSON.stringify({ type: 'response.completed', response: { usage: { input_tokens: i, output_tokens: o } } }),
    ),
);

const messageStart = (input: unknown, cached: unknown) => {
  const usage = { input_tokens: input, cache_read_input_tokens: cached, output_tokens: 1 };
  return JSON.stringify({ type: 'message_start', message: { id: 'm', usage } });
};

const anthropicEvent = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(text, fc.constantFrom('text_delta', 'input_json_delta', 'thinking_delta'), fc.nat(2))
      .map(([t, type, index]) => {
        const field = type === 'text_delta' ? 'text' : type === 'thinking_delta' ? 'thinking' : 'partial_json';
        return JSON.stringify({ type: 'content_block_delta', index, delta: { type, [field]: t } });
      }),
  },
  fc.tuple(count, count).map(([i, c]) => messageStart(i, c)),

  fc
    .tuple(count)
    .map(([o]) =>
      JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: o } }),
    ),
  fc.constantFrom(
    JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: 'not generated' } }),
    JSON.stringify({ type: 'ping' }),
    JSON.stringify({ type: 'content_block_stop', index: 0 }),
    JSON.stringify({ type: 'message_stop' }),
    JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
  ),
);

/** Text that, unescaped, ends the content string and adds a choice before the template's suffix. */
const INJECTED = '"}},{"index":1,"delta":{"content":"injected"}}],"z":[{"w":{"q":"';

/** Bodies no provider sends but a hostile or broken upstream may: each must be read as the parse reads it. */
const oddEvent = fc.oneof(
  fc.tuple(text).map(([t]) => `{"choices":[{"index":0,"delta":{"content":"ab","content":${JSON.stringify(t)}}}]}`),
  fc.tuple(text).map(([t]) => `{"choices":[{"index":0,"delta":{"con\\u0074ent":${JSON.stringify(t)}}}]}`),
  fc.constant('{"type":"response.output_text.delt\\u0061","delta":"abc"}'),
  fc.constant('{"type":"content_block_delta","type":"ping","delta":{"text":"abc"}}'),
  // Around a learnt template: a counter with a leading zero, no digits or cut (not JSON), or another number, a string that closes early and
  // adds a choice of its own before the template's end (valid JSON of another shape).
  fc
    .tuple(text, fc.constantFrom('01700', '', '-', '1700.', '17 00', '1.7e3'))
    .map(([t, created]) => chunkOf({ content: t }, 7, 1700).replace('"created":1700', `"created":${created}`)),
  fc
    .tuple(text, text)
    .map(([a, b]) =>
      chunkOf({ content: `${a}${INJECTED}${b}` }, 7, 1700).replace(JSON.stringify(INJECTED).slice(1, -1), INJECTED),
    ),
  fc.constant('{"choices":[{"index":0,"delta":{"content":"a\u0001b"}}]}'),
  fc.constantFrom('"abc"', '[1,2]', '42', 'null', 'not json', '{"choices":[{"delta":{"content":"cut'),
  fc.constantFrom('{"choices":[{"delta":{"content":"x"}}],}', '{"choices":[{"delta":{"content":1.}}]}', '{"a":-}'),
  fc.tuple(fc.nat(40)).map(([d]) => `${'['.repeat(d)}{"choices":[{"delta":{"content":"deep"}}]}${']'.repeat(d)}`),
  fc.tuple(text).map(([t]) => JSON.stringify({ choices: [{ delta: { content: t } }] }, null, 1).replaceAll('\n', ' ')),
  fc
    .tuple(text)
    .map(([t]) => JSON.stringify({ type: 'content_block_delta', delta: { text: t } }, null, 2).replaceAll('\n', '\t')),
);

/** One event as stream bytes: a data line (or two), maybe named, ended by a blank line. */
const framed = (event: fc.Arbitrary<string>) =>
  fc
    .tuple(event, fc.boolean(), fc.nat(8), fc.constantFrom('\n', '\r\n', '\r'), fc.nat(3))
    .map(([json, named, split, eol, space]) => {
      const data = space === 0 ? 'data:' : 'data: ';
      // Two data lines are joined with a newline: valid when cut between tokens, malformed inside a string.
      const at = split === 0 ? Math.floor(json.length / 2) : -1;
      const lines = at > 0 ? [json.slice(0, at), json.slice(at)] : [json];
      return `${named ? `event: x${eol}` : ''}${lines.map((l) => `${data}${l}${eol}`).join('')}${eol}`;
    });

/** Raw bytes inside a counted string: invalid UTF-8 is replaced when decoded, whatever the reader. */
const invalidUtf8 = fc.constantFrom([0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0xff]);

const stream = (events: fc.Arbitrary<string>) =>
  fc
    .tuple(
      fc.array(fc.oneof({ weight: 8, arbitrary: framed(events) }, framed(oddEvent), fc.constant(': keep-alive\n')), {
        maxLength: 30,
      }),
      fc.option(invalidUtf8),
      fc.boolean(),
      fc.nat(),
    )
    .map(([parts, raw, done, cut]) => {
      let bytes: Uint8Array = Buffer.from(parts.join('') + (done ? 'data: [DONE]\n\n' : ''));
      if (raw !== null) {
        const at = Buffer.from(bytes).indexOf('"content":"');
        if (at !== -1) bytes = Buffer.concat([bytes.subarray(0, at + 11), Buffer.from(raw), bytes.subarray(at + 11)]);
      }
      // Sometimes a stream cut mid-event.
      return cut % 4 === 0 ? bytes.subarray(0, cut % (bytes.length + 1)) : bytes;
    });

describe('the streamed-usage reader against JSON.parse per event', () => {
  for (const [provider, events] of [
    ['openai', openaiEvent],
    ['anthropic', anthropicEvent],
  ] as const) {
    it(`${provider}: the same usage, generated characters and malformed events for any mix and any split (property)`, () => {
      const seed = Date.now();
      console.log(`fast-check seed ${seed}`);
      fc.assert(
        fc.property(stream(events), fc.array(fc.nat(4096), { maxLength: 10 }), (bytes, cuts) => {
          assert.deepEqual(fast(bytes, cuts, provider), reference(bytes, provider));
        }),
        { seed, numRuns: 400 },
      );
    });
  }

  it('the usage tap reads the same usage as the plain reader (property)', () => {
    const seed = Date.now();
    console.log(`fast-check seed ${seed}`);
    fc.assert(
      fc.property(stream(openaiEvent), (bytes) => {
        const tap = createUsageTap({ provider: 'openai' });
        tap.push(Buffer.concat([Buffer.from('data: {}\n\n'), bytes]));
        const reading = tap.end();
        const expected = reference(bytes, 'openai');
        const usage = expected.final
          ? { inputTokens: expected.inputTokens, outputTokens: expected.outputTokens }
          : undefined;
        assert.deepEqual(reading.usage, usage);
        assert.equal(reading.estimatedOutputTokens, Math.ceil(expected.producedChars / 4));
      }),
      { seed, numRuns: 200 },
    );
  });

  it('bounds an event of endless empty data lines (an upstream sending data: and never a blank line)', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const reader = createSseUsageReader('openai', 64 * 1024, emptyUsageState());
    const flood = Buffer.from('data:\n'.repeat(2_000_000));
    gc();
    const before = process.memoryUsage().heapUsed;
    reader.push(flood);
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    reader.push(Buffer.from('\n'));
    assert.equal(reader.malformedEvents > 0, true, 'the event is over the bound');
    assert.ok(grown < 4 * 1024 * 1024, `${grown} bytes of heap held for one event of empty lines`);
  });
});
