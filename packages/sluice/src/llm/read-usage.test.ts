/**
 * readUsage and tapUsage on fake OpenAI (Chat Completions, Responses) and Anthropic (Messages) bodies
 * written here: JSON and SSE, usage missing, malformed, cut, huge lines, hostile numbers, every body shape.
 */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isSluiceError } from '../core/errors.js';
import { estimateInputTokens, inspectUsage, MAX_TOKEN_COUNT, readUsage, tapUsage } from './index.js';

const sse = (events: readonly unknown[], opts: { done?: boolean; named?: boolean } = {}) =>
  events
    .map((e) => {
      const type = (e as { type?: string }).type;
      return `${opts.named && type ? `event: ${type}\n` : ''}data: ${JSON.stringify(e)}\n\n`;
    })
    .join('') + (opts.done ? 'data: [DONE]\n\n' : '');

const chatChunk = (content: string) => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta: { content } }],
});
const chatStream = (usage: unknown) =>
  sse([chatChunk('Hel'), chatChunk('lo'), { id: 'c1', object: 'chat.completion.chunk', choices: [], usage }], {
    done: true,
  });
const chatJson = {
  id: 'c1',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hi { "usage": 1 } there' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17, prompt_tokens_details: { cached_tokens: 0 } },
  system_fingerprint: 'fp',
};
const responsesStream = sse(
  [
    { type: 'response.created', response: { id: 'r1', status: 'in_progress', usage: null } },
    { type: 'response.output_text.delta', delta: 'Hello world' },
    {
      type: 'response.completed',
      response: { id: 'r1', status: 'completed', usage: { input_tokens: 30, output_tokens: 9, total_tokens: 39 } },
    },
  ],
  { named: true },
);
const anthropicStream = (finalOutput: unknown = 42) =>
  sse(
    [
      {
        type: 'message_start',
        message: {
          id: 'm1',
          usage: { input_tokens: 20, cache_read_input_tokens: 5, cache_creation_input_tokens: 1, output_tokens: 1 },
        },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'abcdefgh' } },
      { type: 'ping' },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: finalOutput } },
      { type: 'message_stop' },
    ],
    { named: true },
  );

async function rejectsWith(promise: Promise<unknown>, code: `ERR_SLUICE_${string}`): Promise<string> {
  try {
    await promise;
  } catch (error) {
    assert.ok(isSluiceError(error, code), `expected ${code}, got ${String(error)}`);
    return error.message;
  }
  assert.fail(`expected ${code}, resolved`);
}

describe('readUsage: OpenAI', () => {
  it('reads a Chat Completions JSON body, not fooled by "usage" inside the text', async () => {
    assert.deepEqual(await readUsage(JSON.stringify(chatJson), { provider: 'openai' }), {
      inputTokens: 12,
      outputTokens: 5,
    });
  });
  it('reads usage from the last chunk of a Chat Completions stream', async () => {
    const usage = { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 };
    assert.deepEqual(await readUsage(chatStream(usage), { provider: 'openai' }), { inputTokens: 7, outputTokens: 2 });
  });
  it('reads a Responses JSON body and the response.completed event of its stream', async () => {
    const body = {
      id: 'r1',
      object: 'response',
      output: [],
      usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 },
    };
    assert.deepEqual(await readUsage(JSON.stringify(body), { provider: 'openai' }), {
      inputTokens: 3,
      outputTokens: 4,
    });
    assert.deepEqual(await readUsage(responsesStream, { provider: 'openai' }), { inputTokens: 30, outputTokens: 9 });
  });
  it('a stream without include_usage: a coded answer that says how to get usage, and an estimate', async () => {
    const body = sse([chatChunk('a'.repeat(40)), chatChunk('b'.repeat(40))], { done: true });
    const message = await rejectsWith(readUsage(body, { provider: 'openai' }), 'ERR_SLUICE_LLM_USAGE_MISSING');
    assert.match(message, /include_usage/);
    const reading = await inspectUsage(body, { provider: 'openai' });
    assert.equal(reading.estimatedOutputTokens, 20);
    assert.equal(reading.format, 'sse');
  });
  it('an error body has no usage', async () => {
    const body = JSON.stringify({ error: { message: 'Rate limit', type: 'requests', code: 'rate_limit_exceeded' } });
    assert.match(
      await rejectsWith(readUsage(body, { provider: 'openai' }), 'ERR_SLUICE_LLM_USAGE_MISSING'),
      /error response/,
    );
  });
});

describe('readUsage: Anthropic', () => {
  it('adds message_start input (with cache tokens) to message_delta output', async () => {
    assert.deepEqual(await readUsage(anthropicStream(), { provider: 'anthropic' }), {
      inputTokens: 26,
      outputTokens: 42,
    });
  });
  it('reads a Messages JSON body', async () => {
    const body = {
      id: 'm1',
      type: 'message',
      content: [{ type: 'text', text: 'hi' }],
      usage: { input_tokens: 10, output_tokens: 3 },
    };
    assert.deepEqual(await readUsage(JSON.stringify(body), { provider: 'anthropic' }), {
      inputTokens: 10,
      outputTokens: 3,
    });
  });
  it('a stream cut before message_delta: missing, with the input seen and an output estimate', async () => {
    const cut = anthropicStream().split('event: message_delta')[0] as string;
    await rejectsWith(readUsage(cut, { provider: 'anthropic' }), 'ERR_SLUICE_LLM_USAGE_MISSING');
    const reading = await inspectUsage(cut, { provider: 'anthropic' });
    assert.deepEqual(reading.partial, { inputTokens: 26, outputTokens: 1 });
    assert.equal(reading.estimatedOutputTokens, 2);
  });
});

describe('readUsage: hostile and broken bodies', () => {
  for (const bad of [-1, 1.5, 1e12, '12', Number.MAX_SAFE_INTEGER + 2]) {
    it(`refuses an output count of ${String(bad)} with ERR_SLUICE_LLM_INVALID_USAGE`, async () => {
      await rejectsWith(readUsage(anthropicStream(bad), { provider: 'anthropic' }), 'ERR_SLUICE_LLM_INVALID_USAGE');
      const json = JSON.stringify({ usage: { prompt_tokens: 1, completion_tokens: bad } });
      await rejectsWith(readUsage(json, { provider: 'openai' }), 'ERR_SLUICE_LLM_INVALID_USAGE');
    });
  }
  it('refuses an Anthropic input whose cache tokens take it past the bound: each count is fine, their sum is not', async () => {
    const usage = { input_tokens: 60_000_000, cache_read_input_tokens: 60_000_000, output_tokens: 1 };
    await rejectsWith(readUsage(JSON.stringify({ usage }), { provider: 'anthropic' }), 'ERR_SLUICE_LLM_INVALID_USAGE');
  });
  it('without options (or a provider) is an option error, not a TypeError', async () => {
    await rejectsWith(readUsage('{}', undefined as never), 'ERR_SLUICE_INVALID_OPTION');
    await rejectsWith(readUsage('{}', null as never), 'ERR_SLUICE_INVALID_OPTION');
  });
  it('skips a 1 MB event line without holding it, and still reads the usage after it', async () => {
    const huge = `data: {"choices":[{"delta":{"content":"${'x'.repeat(1024 * 1024)}"}}]}\n\n`;
    const body = huge + chatStream({ prompt_tokens: 1, completion_tokens: 2 });
    const reading = await inspectUsage(body, { provider: 'openai' });
    assert.deepEqual(reading.usage, { inputTokens: 1, outputTokens: 2 });
    assert.equal(reading.droppedLines, 1);
  });
  it('skips malformed events and says so when usage is missing', async () => {
    const body = 'data: {not json\n\ndata: {"choices":[]}\n\n';
    assert.match(
      await rejectsWith(readUsage(body, { provider: 'openai' }), 'ERR_SLUICE_LLM_USAGE_MISSING'),
      /1 malformed/,
    );
  });
  it('a truncated JSON body without usage is malformed; an empty body is missing', async () => {
    await rejectsWith(
      readUsage('{"id":"c1","choices":[{"message":', { provider: 'openai' }),
      'ERR_SLUICE_LLM_MALFORMED_BODY',
    );
    await rejectsWith(readUsage('', { provider: 'openai' }), 'ERR_SLUICE_LLM_USAGE_MISSING');
  });
  it('a usage member past 64 KiB is refused', async () => {
    const body = `{"usage":{"prompt_tokens":1,"completion_tokens":1,"pad":"${'p'.repeat(70_000)}"}}`;
    await rejectsWith(readUsage(body, { provider: 'openai' }), 'ERR_SLUICE_LLM_INVALID_USAGE');
  });
  it('a bad provider is an option error', async () => {
    await rejectsWith(readUsage('{}', { provider: 'gemini' as 'openai' }), 'ERR_SLUICE_INVALID_OPTION');
  });
});

describe('readUsage: every body shape, split anywhere', () => {
  const stream = anthropicStream();
  const bytes = new TextEncoder().encode(stream);
  const expected = { inputTokens: 26, outputTokens: 42 };
  it('a Response, a web stream, a Node stream, an async iterable, a Buffer', async () => {
    const opts = { provider: 'anthropic' } as const;
    assert.deepEqual(await readUsage(new Response(stream), opts), expected);
    assert.deepEqual(await readUsage(new Response(stream).body as ReadableStream<Uint8Array>, opts), expected);
    assert.deepEqual(await readUsage(Readable.from([Buffer.from(bytes)]), opts), expected);
    assert.deepEqual(await readUsage(Buffer.from(bytes), opts), expected);
    const used = new Response(stream);
    await used.text();
    await rejectsWith(readUsage(used, opts), 'ERR_SLUICE_LLM_BODY_USED');
  });
  it('gives the same answer however the bytes are split, with CRLF or CR line ends (property)', async () => {
    const seed = Date.now();
    console.log(`fast-check seed ${seed}`);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat(bytes.length), { maxLength: 12 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        async (cuts, eol) => {
          const text = new TextEncoder().encode(stream.replaceAll('\n', eol));
          const points = [...new Set([0, ...cuts.map((c) => Math.min(c, text.length)), text.length])].sort(
            (a, b) => a - b,
          );
          async function* pieces() {
            for (let i = 1; i < points.length; i++) yield text.subarray(points[i - 1], points[i]);
          }
          assert.deepEqual(await readUsage(pieces(), { provider: 'anthropic' }), expected);
        },
      ),
      { seed, numRuns: 200 },
    );
  });
});

/** A web stream's chunks (the DOM lib's ReadableStream type is not async iterable). */
async function* readAll(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

describe('tapUsage', () => {
  it('forwards the same bytes chunk for chunk and reads usage at the end', async () => {
    const chunks = [...new TextEncoder().encode(responsesStream)]
      .reduce<number[][]>((acc, b, i) => {
        if (i % 37 === 0) acc.push([]);
        (acc.at(-1) as number[]).push(b);
        return acc;
      }, [])
      .map((c) => new Uint8Array(c));
    async function* source() {
      yield* chunks;
    }
    const { body, usage } = tapUsage(source(), { provider: 'openai' });
    const out: Uint8Array[] = [];
    for await (const c of readAll(body)) out.push(c);
    assert.deepEqual(out, chunks);
    assert.deepEqual((await usage).usage, { inputTokens: 30, outputTokens: 9 });
  });
  it('a client that cancels mid-stream: usage resolves with what passed and the source is closed', async () => {
    let closed = false;
    async function* source() {
      try {
        yield new TextEncoder().encode(anthropicStream().split('event: content_block_stop')[0]);
        yield new TextEncoder().encode('never read');
      } finally {
        closed = true;
      }
    }
    const { body, usage } = tapUsage(source(), { provider: 'anthropic' });
    const reader = body.getReader();
    await reader.read();
    await reader.cancel('client left');
    const reading = await usage;
    assert.equal(reading.usage, undefined);
    assert.equal(reading.partial.inputTokens, 26);
    assert.equal(reading.estimatedOutputTokens, 2);
    assert.ok(closed);
  });
  it('an upstream that fails mid-stream: the body errors, usage still resolves', async () => {
    async function* source() {
      yield new TextEncoder().encode(chatStream({ prompt_tokens: 1, completion_tokens: 1 }).slice(0, 60));
      throw new Error('upstream reset');
    }
    const { body, usage } = tapUsage(source(), { provider: 'openai' });
    await assert.rejects(async () => {
      for await (const _ of readAll(body));
    }, /upstream reset/);
    assert.equal((await usage).error?.code, 'ERR_SLUICE_LLM_USAGE_MISSING');
  });
});

describe('estimateInputTokens', () => {
  it('counts text, messages and attachments', () => {
    assert.equal(estimateInputTokens('a'.repeat(40)), 10);
    const chat = { model: 'gpt', messages: [{ role: 'user', content: 'Hello there' }] };
    assert.equal(estimateInputTokens(chat), 3 + 4);
    assert.equal(estimateInputTokens(JSON.stringify(chat)), 7);
    const image = {
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:${'A'.repeat(1e6)}` } }] }],
    };
    assert.equal(estimateInputTokens(image), 1000 + 4);
  });

  // A request padded to hide its prompt from the estimate would pass a token budget's up-front check with a prompt of
  // any size, and a stream without usage would then be settled at that estimate: every string is counted.
  it('counts the whole prompt however the body is padded or nested', () => {
    const prompt = 'x'.repeat(400_000); // 100,000 tokens
    const metadata = Object.fromEntries(Array.from({ length: 100_001 }, (_, i) => [`k${i}`, '']));
    const padded = { model: 'gpt', metadata, messages: [{ role: 'user', content: prompt }] };
    assert.equal(estimateInputTokens(padded), 100_000 + 4);
    assert.equal(estimateInputTokens(JSON.stringify(padded)), 100_000 + 4);
    let deep: unknown = prompt;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.equal(estimateInputTokens({ messages: [{ role: 'user', content: deep }] }), 100_000 + 4);
  });

  it("reads an Anthropic text document's text, and charges other documents and images a flat 1,000", () => {
    const document = (source: unknown) => ({
      messages: [{ role: 'user', content: [{ type: 'document', source }] }],
    });
    assert.equal(
      estimateInputTokens(document({ type: 'text', media_type: 'text/plain', data: 'y'.repeat(40_000) })),
      10_004,
    );
    const content = { type: 'content', content: [{ type: 'text', text: 'z'.repeat(4_000) }] };
    assert.equal(estimateInputTokens(document(content)), 1_004);
    const pdf = { type: 'base64', media_type: 'application/pdf', data: 'A'.repeat(400_000) };
    assert.equal(estimateInputTokens(document(pdf)), 1_004);
  });

  it('a hand-made object with a cycle ends, estimated as the largest request', () => {
    const message: Record<string, unknown> = { role: 'user', content: 'abcd' };
    message.self = message;
    assert.ok(estimateInputTokens({ messages: [message] }) >= MAX_TOKEN_COUNT);
  });
});
