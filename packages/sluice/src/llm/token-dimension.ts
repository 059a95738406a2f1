/** The dimensions a token limiter counts — requests, three kinds of tokens and a cost — each an ordinary limit. */

/** The dimensions, in the order limits are checked and headers are written. */
export const TOKEN_DIMENSIONS = ['requests', 'inputTokens', 'outputTokens', 'totalTokens', 'cost'] as const;
/** One of {@link TOKEN_DIMENSIONS}. */
export type TokenDimension = (typeof TOKEN_DIMENSIONS)[number];
