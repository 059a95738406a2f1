import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createKeyMasker } from './mask-keys.js';

describe('createKeyMasker', () => {
  const a = { domain: '', rule: 'fw10/60000' };
  const b = { domain: '', rule: 'fw11/60000' };

  it('masks values, keeps descriptor keys, and gives one value a different mask under each policy', () => {
    const mask = createKeyMasker();
    const masked = mask('api_key=guess/path=x', a);
    assert.match(masked, /^api_key=#[0-9a-f]{10}\/path=#[0-9a-f]{10}$/);
    assert.equal(mask('api_key=guess/path=x', a), masked, 'stable in a process');
    assert.notEqual(mask('api_key=guess', a), mask('api_key=guess', b));
    assert.notEqual(mask('api_key=guess', a), mask('api_key=guess', { domain: 'fw10/60000', rule: '' }));
  });

  it('is random per process unless a secret is given', () => {
    assert.notEqual(createKeyMasker()('k=v', a), createKeyMasker()('k=v', a));
    const secret = 'a-shared-secret-of-32-characters';
    assert.equal(createKeyMasker({ secret })('k=v', a), createKeyMasker({ secret })('k=v', a));
    assert.throws(() => createKeyMasker({ secret: 'short' }), { code: 'ERR_SLUICE_INVALID_OPTION' });
  });
});
