/** `sluice serve --help` lists every flag serve takes, the capture flags included. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serveCommand } from './serve.js';
import { CAPTURE_FLAGS } from './serve-capture.js';

describe('sluice serve --help', () => {
  it('lists the capture flags', () => {
    for (const flag of Object.keys(CAPTURE_FLAGS))
      assert.match(serveCommand.help, new RegExp(`^ {2}--${flag}\\b`, 'm'));
  });
});
