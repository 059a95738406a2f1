/** A small seeded PRNG (mulberry32): the same seed replays the same attack. */
export interface Rng {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  pick<T>(items: readonly T[]): T;
}

/** The seed of this run: `SLUICE_FUZZ_SEED` when set (to replay a failure), else a fresh one. */
export function fuzzSeed(): number {
  const given = Number(process.env.SLUICE_FUZZ_SEED);
  return Number.isInteger(given) ? given : Math.floor(Math.random() * 2 ** 31);
}

export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    next,
    int: (n) => Math.floor(next() * n),
    pick: (items) => items[Math.floor(next() * items.length)] as never,
  };
}
