/** The dimensions a token limiter counts — requests and three kinds of tokens — each an ordinary limit. */

/** The dimensions, in the order limits are checked and headers are written. */
export const TOKEN_DIMENSIONS = ['requests', 'inputTokens', 'outputTokens', 'totalTokens'] as const;
/** One of {@link TOKEN_DIMENSIONS}. */
export type TokenDimension = (typeof TOKEN_DIMENSIONS)[number];
