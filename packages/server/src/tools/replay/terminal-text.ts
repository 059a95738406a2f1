/**
 * Client-supplied text (keys, descriptor values, check policies) made safe to print on an operator's terminal:
 * a control character could move the cursor, clear the screen, retitle the window or fake a line of the report.
 */

/** C0 controls, DEL and C1 controls (ECMA-48): every character a terminal may act on rather than show. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it escapes
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

const hex = (c: string) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;

/** `text` with each control character shown as `\xHH` (tab and newline too: a key's own, not the report's). */
export const printable = (text: string): string => text.replace(CONTROL, hex);
