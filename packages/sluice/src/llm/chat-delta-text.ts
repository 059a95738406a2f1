/**
 * The usage reader's fast path for the bulk of an OpenAI Chat Completions stream: a delta event that can
 * only add generated text is measured without JSON.parse (most of a stream's events, parsed one by one,
 * were most of the gateway's cost per streamed request).
 */

/** Words whose presence sends an event to the full parse: usage, refusals, tool calls, Responses events, escapes. */
const PARSE_MARKERS = /"usage"|refusal|tool_calls|"type"|"message"|\\/;
const CONTENT_KEY = '"content":';

/**
 * The generated characters of a Chat Completions delta event, or undefined when the event needs the full
 * parse. Exact where it answers: with no backslash no string holds a quote, so each `"content":"…"` is a
 * key and its whole value, as JSON.parse would read it.
 */
export function chatDeltaChars(text: string): number | undefined {
  if (text.charCodeAt(0) !== 0x7b || text.charCodeAt(text.length - 1) !== 0x7d || !text.includes('"choices"'))
    return undefined;
  if (PARSE_MARKERS.test(text)) return undefined;
  let chars = 0;
  for (let at = text.indexOf(CONTENT_KEY); at !== -1; at = text.indexOf(CONTENT_KEY, at)) {
    at += CONTENT_KEY.length;
    while (text.charCodeAt(at) === 0x20) at++;
    if (text.charCodeAt(at) !== 0x22) continue; // null, or an array (logprobs): no generated text
    const end = text.indexOf('"', at + 1);
    if (end === -1) return undefined;
    chars += end - at - 1;
    at = end + 1;
  }
  return chars;
}
