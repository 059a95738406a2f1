/**
 * Where each provider puts usage: OpenAI Chat Completions (`usage.prompt_tokens`/`completion_tokens`,
 * streamed in the last chunk when `stream_options.include_usage` is set), OpenAI Responses
 * (`usage.input_tokens`/`output_tokens`, streamed in `response.completed`), Anthropic Messages
 * (`usage.input_tokens` + cache tokens, streamed split across `message_start` and `message_delta`).
 */
import { SluiceError } from '../core/errors.js';
import { type LlmProvider, MAX_TOKEN_COUNT, tokenCount } from './usage.js';

/** What has been learned from a body so far. */
export interface UsageState {
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  /** True once the provider's final usage was seen (not only a stream's opening figures). */
  final: boolean;
  /** Characters of generated text seen in stream deltas (for an estimate when a stream is cut). */
  producedChars: number;
  /** The first invalid count seen, if any. */
  invalid: SluiceError | undefined;
}

/** A fresh state. */
export const emptyUsageState = (): UsageState => ({
  inputTokens: undefined,
  outputTokens: undefined,
  final: false,
  producedChars: 0,
  invalid: undefined,
});

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function count(state: UsageState, value: unknown, field: string): number | undefined {
  const n = tokenCount(value, field);
  if (n instanceof SluiceError) {
    state.invalid ??= n;
    return undefined;
  }
  return n;
}

/** Reads a `usage` object into the state; `final` says whether it is the provider's last word. */
export function applyUsageObject(state: UsageState, provider: LlmProvider, usage: unknown, final: boolean): void {
  if (!isRecord(usage)) {
    if (usage !== undefined && usage !== null)
      state.invalid ??= new SluiceError(
        'ERR_SLUICE_LLM_INVALID_USAGE',
        'usage is not an object: the upstream sent a body sluice will not charge from',
      );
    return;
  }
  const before = state.invalid;
  let input: number | undefined;
  let output: number | undefined;
  if (provider === 'anthropic') {
    const base = count(state, usage.input_tokens, 'input_tokens');
    const created = count(state, usage.cache_creation_input_tokens, 'cache_creation_input_tokens') ?? 0;
    const read = count(state, usage.cache_read_input_tokens, 'cache_read_input_tokens') ?? 0;
    input = base === undefined ? undefined : base + created + read;
    // Each count is bounded, but their sum is what is charged: it must be a count too.
    if (input !== undefined && input > MAX_TOKEN_COUNT) input = count(state, input, 'input_tokens (with cache tokens)');
    output = count(state, usage.output_tokens, 'output_tokens');
  } else {
    // Chat Completions names them prompt/completion; the Responses API names them input/output.
    input = count(state, usage.prompt_tokens ?? usage.input_tokens, 'input_tokens');
    output = count(state, usage.completion_tokens ?? usage.output_tokens, 'output_tokens');
  }
  if (state.invalid !== before) return;
  if (input !== undefined) state.inputTokens = input;
  if (output !== undefined) state.outputTokens = output;
  if (final && state.inputTokens !== undefined && state.outputTokens !== undefined) state.final = true;
}

const textLength = (v: unknown): number => (typeof v === 'string' ? v.length : 0);

/** Reads one streamed event's data (parsed JSON) into the state. */
export function applyStreamEvent(state: UsageState, provider: LlmProvider, data: unknown): void {
  if (!isRecord(data)) return;
  if (provider === 'anthropic') {
    applyAnthropicEvent(state, data);
    return;
  }
  const type = data.type;
  if (typeof type === 'string' && type.startsWith('response.')) {
    if (type === 'response.output_text.delta' || type === 'response.reasoning_text.delta')
      state.producedChars += textLength(data.delta);
    else if (type === 'response.function_call_arguments.delta') state.producedChars += textLength(data.delta);
    const response = data.response;
    // completed, incomplete and failed all carry the response's final usage.
    if (isRecord(response) && response.usage !== undefined && response.usage !== null)
      applyUsageObject(state, provider, response.usage, true);
    return;
  }
  if (Array.isArray(data.choices)) {
    for (const choice of data.choices) {
      if (!isRecord(choice) || !isRecord(choice.delta)) continue;
      state.producedChars += textLength(choice.delta.content) + textLength(choice.delta.refusal);
      if (Array.isArray(choice.delta.tool_calls))
        for (const call of choice.delta.tool_calls)
          if (isRecord(call) && isRecord(call.function)) state.producedChars += textLength(call.function.arguments);
    }
  }
  if (data.usage !== undefined && data.usage !== null) applyUsageObject(state, provider, data.usage, true);
}

function applyAnthropicEvent(state: UsageState, data: Record<string, unknown>): void {
  switch (data.type) {
    case 'message_start':
      // Input is known here; output_tokens is only the first token or so until message_delta.
      if (isRecord(data.message)) applyUsageObject(state, 'anthropic', data.message.usage, false);
      return;
    case 'message_delta': {
      if (!isRecord(data.usage)) return;
      const before = state.invalid;
      // message_delta's counts are cumulative; input_tokens appears there only in newer API versions.
      const output = count(state, data.usage.output_tokens, 'output_tokens');
      if (data.usage.input_tokens !== undefined && data.usage.input_tokens !== null)
        applyUsageObject(state, 'anthropic', data.usage, false);
      if (state.invalid !== before || output === undefined) return;
      state.outputTokens = output;
      if (state.inputTokens !== undefined) state.final = true;
      return;
    }
    case 'content_block_delta':
      if (isRecord(data.delta))
        state.producedChars +=
          textLength(data.delta.text) + textLength(data.delta.partial_json) + textLength(data.delta.thinking);
      return;
    default:
      return;
  }
}
