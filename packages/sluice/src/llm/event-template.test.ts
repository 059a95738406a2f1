// Tests of the delta template: an event it matches is one JSON.parse reads alike (the same text length);
// counters that move still match, anything that changes the JSON's shape or validity does not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createEventTemplate } from './event-template.js';
import { applyStreamEvent, emptyUsageState } from './provider-usage.js';
import { measured, scanStreamEvent } from './stream-event-scan.js';

const parsedChars = (text: string): number | undefined => {
  const state = emptyUsageState();
  try {
    applyStreamEvent(state, 'openai', JSON.parse(text));
  } catch {
    return undefined;
  }
  return state.producedChars;
};

/** A template learnt from `base`, as the reader learns it. */
function learnt(base: string) {
  const template = createEventTemplate();
  const bytes = Buffer.from(base);
  assert.ok(scanStreamEvent(bytes, 0, bytes.length, 'openai') >= 0);
  template.learn(bytes, 0, bytes.length, measured.start, measured.end);
  return (text: string) => {
    const event = Buffer.from(`data: ${text}\n`);
    return template.match(event, 6, event.length - 1);
  };
}

const chunk = (content: string, created: string, note = '') =>
  `{"id":"chatcmpl-0123","object":"chat.completion.chunk","created":${created},"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}}]${note},"usage":null}`;
const delta = (seq: string, text: string) =>
  `{"type":"response.output_text.delta","sequence_number":${seq},"item_id":"msg_1","delta":${JSON.stringify(text)}}`;

describe('event template', () => {
  it('matches the same shape with other text or other counters, answering what JSON.parse reads', () => {
    const chat = learnt(chunk('Hello', '1700'));
    for (const text of [chunk('World', '1700'), chunk('é "q" 😀\n', '1701'), chunk('', '17000'), chunk('x', '0')]) {
      assert.equal(chat(text), parsedChars(text), text);
    }
    const responses = learnt(delta('1', 'Hi'));
    for (const text of [delta('2', 'a'), delta('10', 'bc'), delta('9999', 'd')]) {
      assert.equal(responses(text), parsedChars(text), text);
    }
  });

  it('does not match what is not JSON or is JSON of another shape', () => {
    const chat = learnt(chunk('Hello', '1700'));
    const injected = chunk('a', '1700').replace('"a"', '"a"}},{"index":1,"delta":{"content":"b"}}],"z":[{"w":{"q":""');
    for (const text of [
      chunk('x', '01700'),
      chunk('x', ''),
      chunk('x', '-'),
      chunk('x', '1700.'),
      chunk('x', '1.7e3'),
      injected,
      chunk('x', '1700').replace('"x"', '"x\u0001"'),
      chunk('x', '1700').replace('"x"', '"x\\q"'),
      chunk('x', '1700').slice(0, -1),
    ]) {
      const answer = chat(text);
      assert.ok(answer === -1 || answer === parsedChars(text), `${text}: ${answer}`);
      if (parsedChars(text) === undefined) assert.equal(answer, -1, text);
    }
    // Inside an escape digits are not free: \ud834 one digit short is not JSON.
    const escaped = learnt(chunk('Hello', '1700', ',"note":"\\ud834"'));
    assert.equal(escaped(chunk('x', '1700', ',"note":"\\ud83"')), -1);
    assert.equal(escaped(chunk('x', '1700', ',"note":"\\ud834"')), 1);
  });
});
