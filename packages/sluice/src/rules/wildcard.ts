/**
 * Compiles a descriptor value with `*` wildcards into an anchored pattern: each `*` matches any run of
 * characters (including none), anywhere and as often as it appears, so `bar*b` matches `barb` and
 * `bar123b` but not `xbarb`. Every other character matches itself.
 */
export function compileWildcard(value: string): RegExp {
  const parts = value.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('.*')}$`, 's');
}

/** True when `value` holds a `*`. */
export function isWildcard(value: string | undefined): value is string {
  return value?.includes('*') === true;
}
