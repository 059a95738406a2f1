/**
 * A seeded pseudo-random generator (mulberry32): the same seed gives the same trace on every machine,
 * so a simulation's numbers can be quoted and reproduced. Not for anything that needs secrecy.
 *
 * @returns a function giving numbers in [0, 1).
 * @example const random = createSeededRandom(1); random(); // always 0.6270739405881613
 */
export function createSeededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
