/** printable: a key's escape codes reach the terminal as text, not as commands. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { printable } from './terminal-text.js';

describe('printable', () => {
  it('shows C0, DEL and C1 controls as \\xHH and leaves other text as it is', () => {
    assert.equal(printable('\u001b[2J\u001b]0;owned\u0007RED\r\nfake'), '\\x1b[2J\\x1b]0;owned\\x07RED\\x0d\\x0afake');
    assert.equal(printable('a\tb\u007f\u009b31m'), 'a\\x09b\\x7f\\x9b31m');
    assert.equal(printable('user=ünïcødé 🙂 /files/*'), 'user=ünïcødé 🙂 /files/*');
  });
});
