/** What a limiter counts under: a string, or named parts joined into one (null and undefined parts left out). */
export type LimiterKey = string | Readonly<Record<string, string | null | undefined>>;
