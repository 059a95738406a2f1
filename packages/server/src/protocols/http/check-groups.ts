/** Grouped `/v1/check` items (`group`): which items share a group, and running every item in request order. */
import type { CheckResult } from './check-results.js';
import { isObject } from './respond.js';

/** Item indices by group, or undefined when no item has a group (the common case: nothing to do). */
export function groupsOf(checks: readonly unknown[]): Map<unknown, number[]> | undefined {
  let groups: Map<unknown, number[]> | undefined;
  checks.forEach((c, i) => {
    if (!isObject(c) || c.group === undefined) return;
    groups ??= new Map();
    // Typed keys: the group 1 and the group "1" are different groups.
    const id = `${typeof c.group}:${String(c.group)}`;
    const indices = groups.get(id);
    if (indices === undefined) groups.set(id, [i]);
    else indices.push(i);
  });
  return groups;
}

/**
 * A grouped item's result: its group is decided when its first item comes up (in request order), and
 * the later items take their results from that. Undefined for an item outside any group.
 */
export function inGroup(
  c: unknown,
  i: number,
  groups: Map<unknown, number[]>,
  decide: (indices: readonly number[]) => Promise<CheckResult[]>,
): Promise<CheckResult> | undefined {
  if (!isObject(c) || c.group === undefined) return undefined;
  const indices = groups.get(`${typeof c.group}:${String(c.group)}`) as number[] & { decided?: Promise<CheckResult[]> };
  indices.decided ??= decide(indices);
  const at = indices.indexOf(i);
  return indices.decided.then((results) => results[at] as CheckResult);
}

/** On a synchronous store each check completes at once; awaiting them in order keeps counting in request order. */
export async function sequential<T>(
  items: readonly unknown[],
  run: (item: unknown, i: number) => Promise<T>,
): Promise<T[]> {
  const out: T[] = [];
  for (const [i, item] of items.entries()) out.push(await run(item, i));
  return out;
}
