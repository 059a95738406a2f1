/**
 * What the HTTP middleware's token budget borrows from \`sluice/llm\` through the token limiter it is
 * given, so the adapters' bundles carry the body readers only when \`sluice/llm\` is in use.
 */
import { estimateInputTokens } from './estimate-input-tokens.js';
import { createUsageTap, type UsageReadOptions, type UsageTap } from './usage-tap.js';

/** The key of the tools on a token limiter (a registered symbol: the same in every bundle). */
export const BUDGET_TOOLS: unique symbol = Symbol.for('sluice.llm.budgetTools') as never;

/** The readers the middleware needs: the input estimate and the response's usage tap. */
export interface BudgetTools {
  estimateInputTokens(request: unknown): number;
  createUsageTap(options: UsageReadOptions): UsageTap;
}

export const budgetTools: BudgetTools = { estimateInputTokens, createUsageTap };
