/** Lease ids no caller can guess: a lease is released by its id, so knowing one must not tell another. */

/** 128 random bits as 22 base64url characters: Web Crypto, which Node, Bun, Deno and Workers all have. */
export function randomLeaseId(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
