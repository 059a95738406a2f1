/**
 * Request paths in one canonical form before rules see them, so that spellings a server treats as the same
 * resource cannot dodge a rule written for one of them (`/login`, `//login`, `/a/../login`, `/%6Cogin`).
 */

/** How paths are folded before matching (the `http.path_matching` section of a rules file). */
export interface PathFolding {
  /** Match paths case-insensitively (`/Login` counts as `/login`). @default true */
  readonly ignoreCase: boolean;
  /** `/login/` counts as `/login` (the root `/` stays). @default true */
  readonly ignoreTrailingSlash: boolean;
  /**
   * `/login;jsessionid=1` counts as `/login`: path parameters (`;…` to the end of a segment) are dropped
   * for matching, and dot segments they hid (`/x/..;/login`) removed again, as Tomcat, Jetty and Spring
   * resolve them. @default true
   */
  readonly ignorePathParameters: boolean;
}

/** The folding a rules file gets when it says nothing: all on, since a limit that is too wide fails safe. */
export const DEFAULT_PATH_FOLDING: PathFolding = {
  ignoreCase: true,
  ignoreTrailingSlash: true,
  ignorePathParameters: true,
};

const UNRESERVED = /[A-Za-z0-9\-._~]/;
/** A path parameter: from `;` to the end of its segment. */
const PATH_PARAMETERS = /;[^/]*/g;
const NEEDS_WORK = /%|\/\/|\/\.|\\/;

/**
 * The path part of a request target (no query) normalised as RFC 3986 §6.2.2 and Envoy's
 * `normalize_path` + `merge_slashes` do: percent-encoded unreserved characters decoded, other escapes
 * kept with upper-case hex (`%2F` stays, so an encoded slash never becomes a separator), runs of `/`
 * merged, `.` and `..` segments removed (never above the root). `undefined` when the path is malformed:
 * a `%` not followed by two hex digits, or not starting with `/`.
 * @example normalizePath('//api/./v1/../%75sers') // '/api/users'
 */
export function normalizePath(path: string): string | undefined {
  if (!path.startsWith('/')) return undefined;
  if (!NEEDS_WORK.test(path)) return path;
  let decoded = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i] as string;
    if (c !== '%') {
      // A backslash is a separator to some servers (IIS, Windows paths): keep it out of the way as an escape.
      decoded += c === '\\' ? '%5C' : c;
      continue;
    }
    const hex = path.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return undefined;
    const ch = String.fromCharCode(Number.parseInt(hex, 16));
    decoded += UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
    i += 2;
  }
  const out: string[] = [];
  const segments = decoded.split('/');
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i] as string;
    const last = i === segments.length - 1;
    if (segment === '' && !last) continue; // merged slashes
    if (segment === '.') {
      if (last) out.push('');
      continue;
    }
    if (segment === '..') {
      out.pop();
      if (last) out.push('');
      continue;
    }
    out.push(segment);
  }
  return `/${out.join('/')}`;
}

/**
 * Applies `folding` to a normalised path: no path parameters, lower case, and no trailing slash but on
 * the root.
 */
export function foldPath(path: string, folding: PathFolding): string {
  let out = path;
  if (folding.ignorePathParameters && out.includes(';')) {
    // An upstream that drops `;…` would serve `/login;x` as `/login`: match it so, or the limit is dodged.
    out = normalizePath(out.replace(PATH_PARAMETERS, '')) ?? out;
  }
  if (folding.ignoreCase) out = out.toLowerCase();
  if (folding.ignoreTrailingSlash) {
    let end = out.length;
    while (end > 1 && out.charCodeAt(end - 1) === 47) end--;
    out = out.slice(0, end);
  }
  return out;
}
