/**
 * A fake OpenAI- and Anthropic-compatible upstream for the gateway's token budget tests and bench: each
 * path answers one way (JSON, SSE with usage in the last event, no usage, malformed, a 1 MB event line,
 * invalid counts, a stream that stalls, one that drops), and remembers the bytes it sent and whether the
 * gateway hung up on it.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What one request to the fake upstream saw. */
export interface UpstreamCall {
  readonly path: string;
  readonly body: string;
  readonly headers: IncomingMessage['headers'];
  /** The bytes sent back, in order. */
  readonly sent: Buffer[];
  /** Resolves when the gateway's connection for this request closed. */
  readonly closed: Promise<void>;
}

export interface FakeLlmUpstream {
  readonly url: string;
  readonly calls: UpstreamCall[];
  /** Resolves with the next call that arrives. */
  nextCall(): Promise<UpstreamCall>;
  close(): Promise<void>;
}

const sse = (data: unknown) => `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
const chatDelta = (text: string) => sse({ choices: [{ index: 0, delta: { content: text } }] });

/** The OpenAI Chat Completions stream of `words`, its usage in the last event when `usage` is given. */
export function openAiStream(words: readonly string[], usage?: Record<string, unknown>): string[] {
  const events = words.map((w) => chatDelta(w));
  if (usage !== undefined) events.push(sse({ choices: [], usage }));
  events.push(sse('[DONE]'));
  return events;
}

/** An Anthropic Messages stream: input in message_start, output in message_delta. */
export function anthropicStream(words: readonly string[], input: number, output: number): string[] {
  return [
    `event: message_start\n${sse({ type: 'message_start', message: { usage: { input_tokens: input, output_tokens: 1 } } })}`,
    ...words.map((w) => sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: w } })),
    sse({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: output } }),
    sse({ type: 'message_stop' }),
  ];
}

type Route = (res: ServerResponse, send: (chunk: string | Buffer) => void) => void;

const streamed =
  (events: readonly string[]): Route =>
  (res, send) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const e of events) send(e);
    res.end();
  };

/** The routes; `/stream/N` streams N short words with usage (for the bench). */
const ROUTES: Record<string, Route> = {
  '/openai/json': (res, send) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    send(
      JSON.stringify({
        id: 'c1',
        choices: [{ message: { content: 'hi' } }],
        usage: { prompt_tokens: 11, completion_tokens: 7 },
      }),
    );
    res.end();
  },
  '/openai/sse': streamed(openAiStream(['Hel', 'lo ', 'there'], { prompt_tokens: 20, completion_tokens: 30 })),
  '/openai/no-usage': streamed(openAiStream(['abcd', 'efgh', 'ijkl'])),
  '/openai/huge-usage': streamed(openAiStream(['abcd'], { prompt_tokens: 1e15, completion_tokens: -5 })),
  '/openai/big-line': streamed([
    chatDelta('x'.repeat(1024 * 1024)),
    ...openAiStream([], { prompt_tokens: 3, completion_tokens: 4 }),
  ]),
  '/openai/malformed': (res, send) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    send('data: {"choices": [ not json\n\n<html>oops</html>');
    res.end();
  },
  '/openai/error': (res, send) => {
    res.writeHead(400, { 'content-type': 'application/json' });
    send(JSON.stringify({ error: { message: 'bad model', type: 'invalid_request_error' } }));
    res.end();
  },
  '/openai/stall': (res, send) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    send(chatDelta('abcdefgh'));
  },
  // A JSON request the model is still working on: no answer yet, until the gateway gives up on it.
  '/openai/think': () => {},
  '/openai/drop': (res, send) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    send(chatDelta('abcdefghijkl'));
    setImmediate(() => res.socket?.destroy());
  },
  '/anthropic/sse': streamed(anthropicStream(['Hi', ' there'], 25, 40)),
  '/anthropic/stall': (res, send) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const e of anthropicStream(['abcdefgh'], 25, 40).slice(0, 2)) send(e);
  },
};

function route(path: string): Route | undefined {
  const fixed = ROUTES[path];
  if (fixed !== undefined) return fixed;
  const m = /^\/stream\/(\d{1,5})$/.exec(path);
  if (m === null) return undefined;
  const n = Number(m[1]);
  // One word is one token here, and the usage says so: 4 characters a word.
  return streamed(
    openAiStream(
      Array.from({ length: n }, () => 'abc '),
      { prompt_tokens: 10, completion_tokens: n },
    ),
  );
}

/** Starts the fake upstream on a free loopback port. */
export async function startFakeLlmUpstream(): Promise<FakeLlmUpstream> {
  const calls: UpstreamCall[] = [];
  const waiting: ((call: UpstreamCall) => void)[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const sent: Buffer[] = [];
      const call: UpstreamCall = {
        path: req.url ?? '/',
        body: Buffer.concat(chunks).toString('utf8'),
        headers: req.headers,
        sent,
        closed: once(res, 'close').then(() => undefined),
      };
      calls.push(call);
      waiting.shift()?.(call);
      const handler = route(call.path);
      if (handler === undefined) {
        res.writeHead(404).end();
        return;
      }
      handler(res, (chunk) => {
        const bytes = Buffer.from(chunk);
        sent.push(bytes);
        res.write(bytes);
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    nextCall: () => new Promise((resolve) => waiting.push(resolve)),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
