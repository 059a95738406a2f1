/**
 * Expands the templated `.lua` files of the Redis store (lua.ts says which, and with what): Lua as written,
 * with three additions that a Lua reader reads at sight and that vanish before Redis sees the script.
 *   - An upper-case call, `PUT_AT(key, value, at)`, is a macro: its text is pasted inline (a script's own
 *     functions are closures built again on every call, which a hot loop cannot afford). Its arguments are
 *     expanded first, then passed to the macro as Lua text.
 *   - An upper-case name, `LOG_ENTRY`, is a constant shared with TypeScript: its value is written in.
 *   - A line ending in `-- if FLAG` is kept only in scripts built with FLAG (`-- unless FLAG`: without it).
 * Names in comments and strings are left alone; an upper-case call that is no macro is an error, so a typo
 * fails at load rather than inside Redis.
 */

/** A macro: its arguments as Lua text (top-level commas split them, each trimmed) to the Lua text it stands for. */
export type LuaMacro = (...args: string[]) => string;

/** What a template may use: macros, constants (as the Lua text to write in) and the flags that are set. */
export interface LuaWords {
  readonly macros: Readonly<Record<string, LuaMacro>>;
  readonly constants: Readonly<Record<string, string | number>>;
  readonly flags?: readonly string[];
}

const TAG = /\s*-- (if|unless) ([A-Z][A-Z0-9_]*)$/;
const UPPER = /^[A-Z][A-Z0-9_]*$/;

/** The template's text with its tagged lines chosen, its macros expanded and its constants written in. */
export function expandLua(source: string, words: LuaWords): string {
  const flags = new Set(words.flags);
  const lines = source.split('\n').flatMap((line) => {
    const tag = line.includes('-- if ') || line.includes('-- unless ') ? TAG.exec(line) : null;
    if (tag === null) return [line];
    return flags.has(tag[2] as string) === (tag[1] === 'if') ? [line.slice(0, tag.index)] : [];
  });
  return expandSpan(lines.join('\n'), words);
}

/** What the expansion stops at: a comment, a string, or a name (everything between is copied as it is). */
const TOKEN = /--[^\n]*|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|[A-Za-z_][A-Za-z0-9_]*/g;

/** Expands macros and constants in `text`, copying comments and strings as they are. */
function expandSpan(text: string, words: LuaWords): string {
  let out = '';
  let copied = 0;
  const token = new RegExp(TOKEN);
  for (let m = token.exec(text); m !== null; m = token.exec(text)) {
    const name = m[0];
    const stop = m.index + name.length;
    if (!UPPER.test(name)) continue;
    if (text[stop] === '(' && name.length > 1) {
      const macro = words.macros[name];
      if (macro === undefined) throw new Error(`Lua template: no macro ${name}`);
      const close = closingParen(text, stop);
      const args = splitArgs(text.slice(stop + 1, close)).map((a) => expandSpan(a, words));
      out += text.slice(copied, m.index) + macro(...args);
      copied = token.lastIndex = close + 1;
    } else if (words.constants[name] !== undefined) {
      out += text.slice(copied, m.index) + String(words.constants[name]);
      copied = stop;
    }
  }
  return out + text.slice(copied);
}

/** The index just past the string literal that opens at `start`. */
function stringEnd(text: string, start: number): number {
  const quote = text[start];
  let i = start + 1;
  while (i < text.length && text[i] !== quote) i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

/** The index of the parenthesis closing the one at `open`, skipping strings. */
function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') i = stringEnd(text, i) - 1;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  throw new Error(`Lua template: unclosed parenthesis in ${text.slice(open, open + 40)}`);
}

/** A macro's arguments: split at commas outside parentheses, braces and strings, each trimmed. */
function splitArgs(text: string): string[] {
  if (text.trim() === '') return [];
  const args: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') i = stringEnd(text, i) - 1;
    else if (c === '(' || c === '{' || c === '[') depth++;
    else if (c === ')' || c === '}' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      args.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  args.push(text.slice(start).trim());
  return args;
}
