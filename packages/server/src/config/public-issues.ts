/** Config problems as shown to API callers: quoted values clipped, at most so many listed. */
import type { LoadResult, RuleIssue } from 'sluice/rules';

/** Longest quoted value an issue message keeps, in characters (the rest becomes `…`). @default 24 */
export const MAX_QUOTED_CHARS = 24;
/** Longest issue message kept, in characters. @default 240 */
export const MAX_ISSUE_MESSAGE_CHARS = 240;

/** What the library says of a rules file that is a plain string: the whole file follows, quoted. */
const TOP_LEVEL_STRING = "(top level): expected a map, got the string '";
/** A quoted value in a message (the library quotes what it read from the file with `'…'`). */
const QUOTED = /'([^']*)'/g;

/**
 * An issue as the service shows it over HTTP (`/api/rules`, `/api/status`, the dashboard: no token
 * needed) and in its logs: it names the file, line, column and code, and quotes at most
 * {@link MAX_QUOTED_CHARS} characters of any value. Issue messages quote what they read, and a "rules
 * file" may be anything a path or symlink points at: a 400 KB file that is one string came back whole,
 * and a link to `/proc/self/environ` showed the admin token. A file that is not a map is never quoted.
 */
export function publicIssue(issue: RuleIssue): RuleIssue {
  let message = issue.message;
  if (message.startsWith(TOP_LEVEL_STRING)) {
    const chars = message.length - TOP_LEVEL_STRING.length - 1;
    message = `(top level): expected a map, got a string of ${chars} characters; a rules file is a map with domain and descriptors`;
  }
  message = message.replace(QUOTED, (_whole, value: string) => `'${capped(value)}'`);
  // The path a message starts with holds the file's own map keys (`token_abc…: unknown field`).
  const colon = message.indexOf(': ');
  if (colon > 0) message = `${message.slice(0, colon).split('.').map(capped).join('.')}${message.slice(colon)}`;
  if (message.length > MAX_ISSUE_MESSAGE_CHARS) message = `${message.slice(0, MAX_ISSUE_MESSAGE_CHARS)}…`;
  return message === issue.message ? issue : { ...issue, message };
}

function capped(text: string): string {
  return text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}…` : text;
}

/** A load result whose issues are {@link publicIssue}s (a good result as it is). */
export function publicResult(result: LoadResult): LoadResult {
  return result.ok ? result : { ...result, issues: result.issues.map(publicIssue) };
}
