/**
 * The few values the SQL stores write into statement text: table names, row ids as hex, numbers and the kit's state
 * JSON — each checked so that nothing a user sends (a key) ever reaches SQL text except as hex.
 */
import { createHash } from 'node:crypto';
import { SluiceError } from '../../core/errors.js';

/** Ids longer than this (in UTF-16 bytes) are stored as their SHA-256, so a hostile key cannot make a huge row or index entry. */
const MAX_ID_BYTES = 512;

/**
 * A row id as the bytes a table stores: the id's UTF-16 code units (every JavaScript string, lone surrogates and NULs
 * included, maps to distinct bytes), or 0x00 + SHA-256 of them when long. Hex, ready for SQL text.
 */
export function idHex(id: string): string {
  const bytes = Buffer.from(id, 'utf16le');
  if (bytes.length <= MAX_ID_BYTES) return bytes.toString('hex');
  return `00${createHash('sha256').update(bytes).digest('hex')}`;
}

/** A 32-bit signed hash of a hex id, for advisory locks (FNV-1a; a collision only makes two keys wait for each other). */
export function lockHash(hex: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < hex.length; i++) {
    h ^= hex.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}

/** A finite number as SQL text. */
export function sqlNumber(n: number): string {
  if (!Number.isFinite(n)) throw new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `not a finite number: ${n}`);
  return String(n);
}

/** The kit's state text as an SQL string literal: it is JSON of numbers and base64url ids, checked to be nothing else. */
export function stateLiteral(text: string): string {
  if (!/^[[\]{}",:0-9.eE+\-a-zA-Z_]*$/.test(text))
    throw new SluiceError(
      'ERR_SLUICE_STORE_UNAVAILABLE',
      'a state the SQL stores cannot write (a bug: please report it)',
    );
  return `'${text}'`;
}

/** A table name option checked and quoted: `name` or `schema.name`, letters, digits and `_` only. */
export function tableName(name: string, option = 'table'): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/.test(name))
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `${option}: ${JSON.stringify(name)} is not a table name; use letters, digits and _ (optionally schema.table)`,
      { option },
    );
  return name
    .split('.')
    .map((part) => `"${part}"`)
    .join('.');
}
