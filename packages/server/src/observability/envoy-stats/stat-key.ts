/**
 * envoy ratelimit's stats key of a descriptor (`domain.key_value.key2`): from the matched rule's identity,
 * from the request's entries for a limit override, or as the engine built it for `detailed_metric` and
 * `value_to_metric` rules; then sanitized as its utils.SanitizeStatName does.
 */

const ESCAPED = /%([0-9A-F]{2})/g;

function decodePart(s: string): string {
  return s.includes('%') ? s.replace(ESCAPED, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))) : s;
}

/**
 * The stats key of a configured rule from its identity (`domain|key=value/key2`, parts %-escaped): the
 * same words envoy joins from the config path (`domain.key_value.key2`). Undefined for an identity that
 * is not a config path (a request's limit override).
 */
export function keyOfRuleId(ruleId: string): string | undefined {
  const bar = ruleId.indexOf('|');
  if (bar < 0) return undefined;
  const path = ruleId.slice(bar + 1);
  if (path.startsWith('override')) return undefined;
  let out = decodePart(ruleId.slice(0, bar));
  if (path === '') return out;
  for (const part of path.split('/')) {
    const eq = part.indexOf('=');
    out += eq < 0 ? `.${decodePart(part)}` : `.${decodePart(part.slice(0, eq))}_${decodePart(part.slice(eq + 1))}`;
  }
  return out;
}

/** envoy's descriptorKey: the key of a descriptor sent with its own limit (config_impl.go). */
export function keyOfEntries(domain: string, entries: readonly { key: string; value: string }[]): string {
  let key = '';
  for (const entry of entries) {
    if (key !== '') key += '.';
    key += entry.value === '' ? entry.key : `${entry.key}_${entry.value}`;
  }
  return `${domain}.${key}`;
}

const IPV4 = /\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}/g;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
const UNSAFE = /[:|\u0000-\u001f\u007f]/g;

/**
 * utils.SanitizeStatName: `:` and `|` become `_`, and so do the dots of an IPv4 address. Control
 * characters become `_` too (envoy lets a descriptor value's newline start a statsd line of its own).
 */
export function sanitizeStatName(s: string): string {
  return s.replace(UNSAFE, '_').replace(IPV4, (ip) => ip.replaceAll('.', '_'));
}

/**
 * gostats' tag suffix (`.__k=v`, keys sorted, `.`, `:` and `|` in values replaced by `_`) that EXTRA_TAGS
 * puts on every statsd name under the `ratelimit` and `ratelimit_server` scopes.
 */
export function tagSuffix(tags: Readonly<Record<string, string>>): string {
  let out = '';
  for (const key of Object.keys(tags).sort()) out += `.__${key}=${(tags[key] as string).replace(/[.:|]/g, '_')}`;
  return out;
}
