/**
 * `sluice/llm`: token budgets for LLM APIs — read what an OpenAI or Anthropic response cost from its
 * body (JSON or streamed), while forwarding it if need be, and estimate a request's input tokens.
 */
export type { LlmBody } from './body-chunks.js';
export {
  createTokenLimiter,
  type TokenCost,
  type TokenLimiter,
  type TokenLimiterOptions,
  type TokenReservation,
  type TokenSettleResult,
} from './create-token-limiter.js';
export { estimateInputTokens } from './estimate-input-tokens.js';
export { inspectUsage, readUsage } from './read-usage.js';
export { type TappedBody, tapUsage } from './tap-usage.js';
export { TOKEN_DIMENSIONS, type TokenDimension } from './token-dimension.js';
export { tokenHeaders } from './token-headers.js';
export type { CostLimitOptions, TokenPrices } from './token-price.js';
export { type LlmProvider, MAX_TOKEN_COUNT, type Usage } from './usage.js';
export { createUsageTap, type UsageReading, type UsageReadOptions, type UsageTap } from './usage-tap.js';
