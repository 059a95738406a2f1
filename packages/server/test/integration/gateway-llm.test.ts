/**
 * `sluice serve --upstream` with an `llm:` rules section (issue 40), in front of a fake OpenAI and a fake
 * Anthropic upstream: each request reserves its estimate under its hashed key, the response comes back
 * byte for byte, and the reservation is settled at the usage the body reported — or, when there is none,
 * at what passed; a stream cut before its end (client abort, stalled or dropped upstream) is charged its
 * input and its reserved output (the upstream generated past what passed). What a request
 * was charged is read from the next request's x-ratelimit-remaining-tokens (total tokens).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type FakeLlmUpstream, startFakeLlmUpstream } from './fake-llm-upstream.js';
import { startSluice, tempFile, unique } from './helpers.js';

const LIMIT = 1_000_000;
const MAX_TOKENS = 100;
const BODY = JSON.stringify({
  model: 'm',
  messages: [{ role: 'user', content: 'Hello there' }],
  max_tokens: MAX_TOKENS,
});

const rules = (provider: string) => `domain: llm-${provider}
llm:
  provider: ${provider}
  key: { header: authorization }
  limits:
    requests: { limit: 1000, period: 1h }
    total_tokens: { limit: ${LIMIT}, period: 1h }
`;

interface Answer {
  status: number;
  headers: Headers;
  bytes: Buffer;
}

async function startGateway(provider: string, upstream: FakeLlmUpstream) {
  const file = tempFile('llm.yaml', rules(provider));
  const sluice = await startSluice(['--config', file.path, '--upstream', upstream.url, '--no-watch']);
  const url = `http://127.0.0.1:${sluice.proxy}`;
  const call = async (path: string, key: string, body = BODY): Promise<Answer> => {
    const res = await fetch(url + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
    });
    return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
  };
  const stop = () => {
    file.remove();
    return sluice.stop();
  };
  return { sluice, url, call, stop };
}

const remaining = (a: Answer) => Number(a.headers.get('x-ratelimit-remaining-tokens'));

describe('gateway llm: openai upstream', { timeout: 60_000 }, () => {
  let upstream: FakeLlmUpstream;
  let gw: Awaited<ReturnType<typeof startGateway>>;
  /** The estimate of BODY's input tokens, read from a first reservation. */
  let estimate: number;
  before(async () => {
    upstream = await startFakeLlmUpstream();
    gw = await startGateway('openai', upstream);
    const first = await gw.call('/openai/json', unique('k'));
    estimate = LIMIT - MAX_TOKENS - remaining(first);
    assert.ok(estimate > 0 && estimate < 50, `estimate ${estimate}`);
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  /** What a request to `path` was charged in total tokens (its key's next request shows it). */
  async function charged(path: string): Promise<{ answer: Answer; charged: number }> {
    const key = unique('key');
    const answer = await gw.call(path, key);
    const next = await gw.call('/openai/json', key);
    return { answer, charged: remaining(answer) - remaining(next) };
  }

  it('JSON and SSE bodies: forwarded byte for byte, settled at the reported usage, with token headers', async () => {
    const json = await charged('/openai/json');
    assert.equal(json.charged, 18);
    assert.deepEqual(json.answer.bytes, Buffer.concat(upstream.calls.at(-2)?.sent ?? []));
    const stream = await charged('/openai/sse');
    assert.equal(stream.charged, 50);
    assert.deepEqual(stream.answer.bytes, Buffer.concat(upstream.calls.at(-2)?.sent ?? []));
    const h = stream.answer.headers;
    assert.equal(h.get('x-ratelimit-limit-tokens'), String(LIMIT));
    assert.equal(h.get('x-ratelimit-limit-requests'), '1000');
    assert.equal(h.get('content-type'), 'text/event-stream');
    // The upstream got the body as sent, and the key header (it is the upstream's credential).
    assert.equal(upstream.calls.at(-1)?.body, BODY);
  });

  it('a 1 MB event line passes whole; usage after it is still read', async () => {
    const big = await charged('/openai/big-line');
    assert.equal(big.charged, 7);
    assert.equal(big.answer.bytes.length, Buffer.concat(upstream.calls.at(-2)?.sent ?? []).length);
    assert.ok(big.answer.bytes.length > 1024 * 1024);
  });

  it('no usage, invalid counts or a malformed body: the estimate is charged; an error answer only its request', async () => {
    assert.equal((await charged('/openai/no-usage')).charged, estimate + 3);
    assert.equal((await charged('/openai/huge-usage')).charged, estimate + 1);
    assert.equal((await charged('/openai/malformed')).charged, estimate);
    const error = await charged('/openai/error');
    assert.equal(error.answer.status, 400);
    assert.equal(error.charged, 0);
  });

  it('a client that leaves a stalled stream, and an upstream that drops, are charged their reserved output', async () => {
    const key = unique('stall');
    const seen = upstream.nextCall();
    const abort = new AbortController();
    const res = await fetch(`${gw.url}/openai/stall`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: BODY,
      signal: abort.signal,
    });
    const reader = res.body?.getReader();
    await reader?.read();
    abort.abort();
    await (await seen).closed;
    const next = await gw.call('/openai/json', key);
    // The upstream may have generated past what passed (it stops when it sees the close): max_tokens bounds it.
    assert.equal(remaining(res as unknown as Answer) - remaining(next), estimate + MAX_TOKENS);

    const dropKey = unique('drop');
    const dropped = await fetch(`${gw.url}/openai/drop`, {
      method: 'POST',
      headers: { authorization: `Bearer ${dropKey}` },
      body: BODY,
    });
    await assert.rejects(dropped.arrayBuffer());
    const after = await gw.call('/openai/json', dropKey);
    assert.equal(remaining(dropped as unknown as Answer) - remaining(after), estimate + MAX_TOKENS);
  });

  it('a client that stops waiting for a JSON answer is charged its reservation: the model was at work', async () => {
    const key = unique('think');
    const before = await gw.call('/openai/json', key);
    const seen = upstream.nextCall();
    const abort = new AbortController();
    const waiting = fetch(`${gw.url}/openai/think`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: BODY,
      signal: abort.signal,
    });
    await seen;
    abort.abort();
    await assert.rejects(waiting);
    await (await seen).closed;
    const next = await gw.call('/openai/json', key);
    // The JSON answer's 18, then the whole reservation of the abandoned one.
    assert.equal(remaining(before) - remaining(next), 18 + estimate + MAX_TOKENS);
  });

  it('over budget: 429 with the token headers, the upstream never called; no key: 401; huge body: 413', async () => {
    const key = unique('over');
    const before = upstream.calls.length;
    const huge = JSON.stringify({ model: 'm', messages: [], max_tokens: LIMIT * 2 });
    const refused = await gw.call('/openai/json', key, huge);
    assert.equal(refused.status, 429);
    assert.equal(JSON.parse(refused.bytes.toString()).error.code, 'ERR_SLUICE_LLM_BUDGET');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.equal(refused.headers.get('x-ratelimit-limit-tokens'), String(LIMIT));
    assert.equal(upstream.calls.length, before);
    const anonymous = await fetch(`${gw.url}/openai/json`, { method: 'POST', body: BODY });
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { error: { code: string } }).error.code, 'ERR_SLUICE_LLM_KEY_MISSING');
    const tooBig = await gw.call('/openai/json', key, 'x'.repeat(9 * 1024 * 1024)).catch(() => undefined);
    assert.ok(tooBig === undefined || tooBig.status === 413);
    // The service still answers, and never logged a raw key.
    assert.equal((await gw.call('/openai/json', key)).status, 200);
    assert.ok(!gw.sluice.stdout.some((line) => line.includes('Bearer ')));
  });

  it('every reservation of the cases above was settled: none outstanding, each counted by how', async () => {
    const metrics = await fetch(`http://127.0.0.1:${gw.sluice.http}/metrics`).then((r) => r.text());
    assert.match(metrics, /^sluice_llm_reservations_outstanding 0$/m);
    assert.match(metrics, /^sluice_llm_requests_total\{settled="usage"\} [1-9]/m);
    assert.match(metrics, /^sluice_llm_requests_total\{settled="estimate"\} [1-9]/m);
    assert.match(metrics, /^sluice_llm_requests_total\{settled="refused"\} 1$/m);
    // The dashboard's keys show each key's tokens beside its requests (the key hashed, then masked).
    const top = await fetch(`http://127.0.0.1:${gw.sluice.http}/api/top-keys?n=100`).then((r) => r.text());
    assert.match(top, /llm:totalTokens/);
    assert.match(top, /llm:requests/);
    assert.ok(!top.includes('Bearer'));
  });
});

describe('gateway llm: anthropic upstream', { timeout: 60_000 }, () => {
  let upstream: FakeLlmUpstream;
  let gw: Awaited<ReturnType<typeof startGateway>>;
  before(async () => {
    upstream = await startFakeLlmUpstream();
    gw = await startGateway('anthropic', upstream);
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('an SSE stream settles at message_start input plus message_delta output; a cut one at its input and reserved output', async () => {
    const key = unique('a');
    const first = await gw.call('/anthropic/sse', key);
    assert.deepEqual(first.bytes, Buffer.concat(upstream.calls.at(-1)?.sent ?? []));
    const second = await gw.call('/anthropic/sse', key);
    assert.equal(remaining(first) - remaining(second), 65);

    const cutKey = unique('cut');
    const seen = upstream.nextCall();
    const abort = new AbortController();
    const res = await fetch(`${gw.url}/anthropic/stall`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cutKey}` },
      body: BODY,
      signal: abort.signal,
    });
    await res.body?.getReader().read();
    abort.abort();
    await (await seen).closed;
    const next = await gw.call('/anthropic/sse', cutKey);
    // Input 25 from message_start; output: the reserved max_tokens (the upstream stopped at the close).
    assert.equal(remaining(res as unknown as Answer) - remaining(next), 25 + MAX_TOKENS);
  });
});
