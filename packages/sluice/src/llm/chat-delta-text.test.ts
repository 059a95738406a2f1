// Tests of the Chat Completions fast path: where it answers, it counts what the full parse counts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatDeltaChars } from './chat-delta-text.js';
import { applyStreamEvent, emptyUsageState } from './provider-usage.js';

const parsed = (text: string) => {
  const state = emptyUsageState();
  applyStreamEvent(state, 'openai', JSON.parse(text));
  return state.producedChars;
};

describe('chatDeltaChars', () => {
  const answered = [
    '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"abc "}}]}',
    '{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}',
    '{"choices":[{"index":0,"delta":{"content":"é 😀 ünï"}},{"index":1,"delta":{"content":"xy"}}]}',
    '{"choices":[{"index":0,"delta":{"content": "spaced"},"logprobs":{"content":[{"token":"a"}]}}]}',
    '{"choices":[{"index":0,"delta":{"content":null},"finish_reason":"stop"}]}',
    '{"choices":[{"index":0,"delta":{}}]}',
  ];
  it('counts the generated characters of a plain delta event as the full parse does', () => {
    for (const text of answered) assert.equal(chatDeltaChars(text), parsed(text), text);
  });

  it('leaves to the full parse every event that may say more than generated text', () => {
    for (const text of [
      '{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}}',
      '{"choices":[{"index":0,"delta":{"content":"a \\"quoted\\" word"}}]}',
      '{"choices":[{"index":0,"delta":{"refusal":"no"}}]}',
      '{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]}',
      '{"type":"response.output_text.delta","delta":"abc"}',
      '{"choices":[{"index":0,"message":{"content":"abc"}}]}',
      '{"choices":[{"index":0,"delta":{"content":"cut',
      'not json',
    ])
      assert.equal(chatDeltaChars(text), undefined, text);
  });
});
