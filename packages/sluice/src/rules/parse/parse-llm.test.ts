/** The rules' `llm:` section: a valid one read into LlmRules, and each problem with its code and line. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRules } from '../parse-rules.js';

const parse = (llm: string) => parseRules([{ file: 'llm.yaml', text: `domain: gw\nllm:\n${llm}` }]);

describe('rules: llm section', () => {
  it('reads provider, hashed-key header and any subset of the four limits', () => {
    const result = parse(
      '  provider: anthropic\n  key: { header: X-API-Key }\n  limits:\n    requests: { limit: 60, period: 1m }\n    total_tokens: { limit: 25000, period: 60000 }\n',
    );
    assert.ok(result.ok);
    assert.deepEqual(result.ruleSet.domains.get('gw')?.llm, {
      provider: 'anthropic',
      keyHeader: 'x-api-key',
      limits: { requests: { limit: 60, periodMs: 60_000 }, totalTokens: { limit: 25_000, periodMs: 60_000 } },
    });
  });

  it('reports each problem with a code and a line', () => {
    const cases: [string, string, number][] = [
      [
        '  provider: gemini\n  key: { header: authorization }\n  limits: { requests: { limit: 1, period: 1m } }\n',
        'ERR_SLUICE_RULES_INVALID_VALUE',
        3,
      ],
      ['  provider: openai\n  limits: { requests: { limit: 1, period: 1m } }\n', 'ERR_SLUICE_RULES_MISSING_FIELD', 3],
      [
        '  provider: openai\n  key: { header: "a b" }\n  limits: { requests: { limit: 1, period: 1m } }\n',
        'ERR_SLUICE_RULES_INVALID_VALUE',
        4,
      ],
      ['  provider: openai\n  key: { header: authorization }\n  limits: {}\n', 'ERR_SLUICE_RULES_MISSING_FIELD', 5],
      [
        '  provider: openai\n  key: { header: authorization }\n  limits: { tokens: { limit: 1, period: 1m } }\n',
        'ERR_SLUICE_RULES_UNKNOWN_FIELD',
        5,
      ],
      [
        '  provider: openai\n  key: { header: authorization }\n  limits: { requests: { limit: -1, period: 1m } }\n',
        'ERR_SLUICE_RULES_INVALID_LIMIT',
        5,
      ],
      [
        '  provider: openai\n  key: { header: authorization }\n  limits: { requests: { limit: 1, period: soon } }\n',
        'ERR_SLUICE_RULES_BAD_DURATION',
        5,
      ],
      [
        '  provider: openai\n  key: { header: authorization }\n  limits: { requests: { limit: 1 } }\n',
        'ERR_SLUICE_RULES_MISSING_FIELD',
        5,
      ],
    ];
    for (const [text, code, line] of cases) {
      const result = parse(text);
      assert.equal(result.ok, false, text);
      const issue = result.ok ? undefined : result.issues[0];
      assert.equal(issue?.code, code, text);
      assert.equal(issue?.line, line, text);
    }
  });
});
