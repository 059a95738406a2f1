/**
 * The usage reader's fast path for one streamed event: its JSON read from its bytes — never decoded to a
 * string nor parsed into objects — to measure the generated text it adds, or to say the full parse must
 * read it (it carries usage or the counts of a Messages stream, or it is anything this reader cannot vouch
 * for). Where it answers it answers what `JSON.parse` and `applyStreamEvent` would (the differential test
 * holds it to that); most of a stream's events are text deltas, and parsing each was most of its cost.
 */
import { asciiBytes, bytesAre, bytesStartWith, lastString, skipLiteral, skipNumber, skipString } from './json-bytes.js';
import type { LlmProvider } from './usage.js';

/** The answer for an event the full parse must read. */
export const NEEDS_PARSE = -1;

// Where a value sits (only the places generated text or usage can be), and what a member's value is for.
// An object or array role is the context of the container it opens; the others are about scalars.
const PLAIN = 0;
const ROOT = 1;
const CHOICES = 2;
const CHOICE = 3;
const DELTA = 4;
const TOOL_CALLS = 5;
const TOOL_CALL = 6;
const FUNCTION = 7;
const BLOCK_DELTA = 8;
const TEXT = 9;
const ROOT_DELTA_TEXT = 10;
const TYPE = 11;
const USAGE = 12;
const RESPONSE = 13;

interface Member {
  /** The key's bytes (a key is compared byte by byte as it lies in the event). */
  readonly name: Uint8Array;
  readonly role: number;
}
const member = (name: string, role: number): Member => ({ name: asciiBytes(name), role });
/** The members that matter in each object context (index = context), with the role of their value. */
const MEMBERS: readonly (readonly Member[])[] = [
  [],
  [
    member('choices', CHOICES),
    member('usage', USAGE),
    member('response', RESPONSE),
    member('type', TYPE),
    member('delta', ROOT_DELTA_TEXT),
  ],
  [],
  [member('delta', DELTA)],
  [member('content', TEXT), member('refusal', TEXT), member('tool_calls', TOOL_CALLS)],
  [],
  [member('function', FUNCTION)],
  [member('arguments', TEXT)],
  [member('text', TEXT), member('partial_json', TEXT), member('thinking', TEXT)],
];
/** Deeper nesting goes to the full parse (recursion here is bounded; a provider's events are ~6 deep). */
const MAX_DEPTH = 32;

// What the event being read says, written as it is read (one set for every event: no allocation per
// event). The position itself is passed along in arguments: a loop over a module variable runs ~3x slower.
let anthropic = false;
let textUnits = 0;
let textStrings = 0;
let textStart = 0;
let textEnd = 0;
let rootDeltaUnits = 0;
let rootDeltaStart = -1;
let rootDeltaEnd = 0;
let typeStart = -1;
let typeEnd = -1;
let typeEscaped = false;
let sawUsage = false;
let sawResponse = false;

/**
 * The UTF-16 length of the generated text in the event `bytes[start, end)` (one `data:` value), or
 * `NEEDS_PARSE`. A malformed event needs the parse too: that is where it is counted as malformed.
 */
export function scanStreamEvent(bytes: Uint8Array, start: number, end: number, provider: LlmProvider): number {
  anthropic = provider === 'anthropic';
  textUnits = 0;
  textStrings = 0;
  rootDeltaUnits = 0;
  rootDeltaStart = -1;
  typeStart = -1;
  typeEscaped = false;
  sawUsage = false;
  sawResponse = false;
  measured.start = -1;
  const at = value(bytes, start, end, ROOT, 0);
  if (at === -1 || skipSpace(bytes, at, end) !== end || typeEscaped) return NEEDS_PARSE;
  return anthropic ? anthropicText(bytes) : openaiText(bytes);
}

/**
 * Where the one string the last answered event's count came from lies (`start` -1 when it was not
 * exactly one string): the rest of the event, around it, is a template later events may match.
 */
export const measured = { start: -1, end: 0 };

function measuredFrom(start: number, end: number, units: number): number {
  measured.start = start;
  measured.end = end;
  return units;
}

/** The event types that matter, as bytes. */
const TYPES = {
  response: asciiBytes('response.'),
  response_output_text_delta: asciiBytes('response.output_text.delta'),
  response_reasoning_text_delta: asciiBytes('response.reasoning_text.delta'),
  response_function_call_arguments_delta: asciiBytes('response.function_call_arguments.delta'),
  message_start: asciiBytes('message_start'),
  message_delta: asciiBytes('message_delta'),
  content_block_delta: asciiBytes('content_block_delta'),
};

/** As `applyStreamEvent` reads an OpenAI event: a Responses event by its type, else a Chat Completions chunk. */
function openaiText(bytes: Uint8Array): number {
  if (typeStart >= 0 && bytesStartWith(bytes, typeStart, typeEnd, TYPES.response)) {
    if (sawResponse) return NEEDS_PARSE; // completed, incomplete, failed: the response's usage
    const delta =
      bytesAre(bytes, typeStart, typeEnd, TYPES.response_output_text_delta) ||
      bytesAre(bytes, typeStart, typeEnd, TYPES.response_reasoning_text_delta) ||
      bytesAre(bytes, typeStart, typeEnd, TYPES.response_function_call_arguments_delta);
    if (!delta) return 0;
    return rootDeltaStart < 0 ? 0 : measuredFrom(rootDeltaStart, rootDeltaEnd, rootDeltaUnits);
  }
  if (sawUsage) return NEEDS_PARSE;
  return textStrings === 1 ? measuredFrom(textStart, textEnd, textUnits) : textUnits;
}

/** As `applyStreamEvent` reads a Messages event: text deltas counted, the events with counts parsed. */
function anthropicText(bytes: Uint8Array): number {
  if (typeStart < 0) return 0;
  if (
    bytesAre(bytes, typeStart, typeEnd, TYPES.message_start) ||
    bytesAre(bytes, typeStart, typeEnd, TYPES.message_delta)
  )
    return NEEDS_PARSE;
  if (!bytesAre(bytes, typeStart, typeEnd, TYPES.content_block_delta)) return 0;
  return textStrings === 1 ? measuredFrom(textStart, textEnd, textUnits) : textUnits;
}

function skipSpace(buf: Uint8Array, i: number, end: number): number {
  while (i < end) {
    const b = buf[i];
    if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return i;
    i++;
  }
  return i;
}

/**
 * Reads one value in `role` from `i`: the index after it, or -1 when it is not JSON or not something this
 * reader vouches for.
 */
function value(buf: Uint8Array, i: number, end: number, role: number, depth: number): number {
  i = skipSpace(buf, i, end);
  if (i >= end) return -1;
  const b = buf[i] as number;
  // usage: null and response: null say nothing; any other value may hold counts.
  if (role === USAGE && b !== 0x6e) sawUsage = true;
  if (role === RESPONSE && b !== 0x6e) sawResponse = true;
  if (b === 0x7b) {
    const context = role <= BLOCK_DELTA && role !== CHOICES && role !== TOOL_CALLS ? role : PLAIN;
    return object(buf, i + 1, end, context, depth + 1);
  }
  if (b === 0x5b) return array(buf, i + 1, end, role === CHOICES || role === TOOL_CALLS ? role : PLAIN, depth + 1);
  if (b === 0x22) return string(buf, i + 1, end, role);
  return b === 0x74 || b === 0x66 || b === 0x6e ? skipLiteral(buf, i, end) : skipNumber(buf, i, end);
}

/** A string value from just after its quote: generated text is measured, a root `type` noted. */
function string(buf: Uint8Array, from: number, end: number, role: number): number {
  const counted = role === TEXT || (role === ROOT_DELTA_TEXT && !anthropic);
  const after = skipString(buf, from, end, counted);
  if (after === -1) return -1;
  if (role === TEXT) {
    textUnits += lastString.units;
    textStrings++;
    textStart = from;
    textEnd = after - 1;
  } else if (role === ROOT_DELTA_TEXT && !anthropic) {
    rootDeltaUnits += lastString.units;
    rootDeltaStart = from;
    rootDeltaEnd = after - 1;
  } else if (role === TYPE) {
    typeStart = from;
    typeEnd = after - 1;
    typeEscaped = lastString.escaped;
  }
  return after;
}

/** An object's members from just after its brace; the index after its closing brace, or -1. */
function object(buf: Uint8Array, i: number, end: number, context: number, depth: number): number {
  if (depth > MAX_DEPTH) return -1;
  i = skipSpace(buf, i, end);
  if (i < end && buf[i] === 0x7d) return i + 1;
  const members = MEMBERS[context] as readonly Member[];
  let seen = 0;
  for (;;) {
    i = skipSpace(buf, i, end);
    if (i >= end || buf[i] !== 0x22) return -1;
    const from = i + 1;
    i = skipString(buf, from, end, false);
    if (i === -1) return -1;
    // An escaped key may spell one that matters.
    if (lastString.escaped && members.length > 0) return -1;
    let role = PLAIN;
    for (let k = 0; k < members.length; k++) {
      const m = members[k] as Member;
      if (!bytesAre(buf, from, i - 1, m.name)) continue;
      // JSON.parse keeps a repeated key's last value: leave that to it.
      if ((seen & (1 << k)) !== 0) return -1;
      seen |= 1 << k;
      role = roleIn(context, m.role);
    }
    i = skipSpace(buf, i, end);
    if (i >= end || buf[i] !== 0x3a) return -1;
    i = value(buf, i + 1, end, role, depth);
    if (i === -1) return -1;
    i = skipSpace(buf, i, end);
    if (i < end && buf[i] === 0x7d) return i + 1;
    if (i >= end || buf[i] !== 0x2c) return -1;
    i++;
  }
}

/** A member's role, where its provider gives it one. */
function roleIn(context: number, role: number): number {
  if (context !== ROOT) return role;
  if (role === CHOICES && anthropic) return PLAIN;
  if (role === ROOT_DELTA_TEXT && anthropic) return BLOCK_DELTA;
  return role;
}

/** An array's items from just after its bracket; the index after its closing bracket, or -1. */
function array(buf: Uint8Array, i: number, end: number, context: number, depth: number): number {
  if (depth > MAX_DEPTH) return -1;
  i = skipSpace(buf, i, end);
  if (i < end && buf[i] === 0x5d) return i + 1;
  const item = context === CHOICES ? CHOICE : context === TOOL_CALLS ? TOOL_CALL : PLAIN;
  for (;;) {
    i = value(buf, i, end, item, depth);
    if (i === -1) return -1;
    i = skipSpace(buf, i, end);
    if (i < end && buf[i] === 0x5d) return i + 1;
    if (i >= end || buf[i] !== 0x2c) return -1;
    i++;
  }
}
