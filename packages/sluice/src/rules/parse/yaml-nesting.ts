/**
 * How deeply a YAML (or JSON) text nests its collections, read from yaml's concrete syntax tree before the
 * document is composed: yaml's composer recurses once per level and runs out of stack at a depth that
 * depends on the thread (about 1,200 levels on the main thread, more in a worker).
 */
import type { CST } from 'yaml';

/**
 * The offset of the first collection nested more than `limit` deep in `tokens`, or undefined. Walks with
 * an explicit stack, so any depth is measured without recursion.
 */
export function tooDeepAt(tokens: readonly CST.Token[], limit: number): number | undefined {
  const stack: { token: CST.Token | null | undefined; depth: number }[] = tokens.map((token) => ({ token, depth: 0 }));
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { token, depth } = next;
    if (token === null || token === undefined) continue;
    if (token.type === 'document') stack.push({ token: token.value, depth });
    if (token.type !== 'block-map' && token.type !== 'block-seq' && token.type !== 'flow-collection') continue;
    if (depth + 1 > limit) return token.offset;
    for (const item of token.items) {
      stack.push({ token: item.key, depth: depth + 1 }, { token: item.value, depth: depth + 1 });
    }
  }
  return undefined;
}
