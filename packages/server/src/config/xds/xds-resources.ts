/**
 * The RateLimitConfig resources of one xDS response read as rules, exactly as files are (each resource a rule
 * source for `parseRules`), and why a refused one was refused (the NACK's detail).
 */
import type { LoadResult, RuleSet } from 'sluice/rules';
import { parseRules } from 'sluice/rules';
import type { DiscoveryResponse } from './ads-client.js';
import { decodeRateLimitConfig, RATE_LIMIT_CONFIG_TYPE_URL, ruleSourceOf } from './rls-config.js';

/** Where valid rules go, and how resources of one domain combine. */
export interface RulesTarget {
  apply(ruleSet: RuleSet): void;
  /** Merge resources of one domain (MERGE_DOMAIN_CONFIG). */
  mergeDomains: boolean;
}

/** Why a config was refused, for the NACK's error detail (bounded). */
export function nackMessage(result: LoadResult & { ok: false }): string {
  const why = result.issues.map((i) => `${i.file}:${i.line}:${i.column} ${i.code} ${i.message}`).join('\n');
  return why.slice(0, 16_384);
}

/** The rules a response carries, parsed and applied; a failed load (bad resources, a throwing apply) as issues. */
export function loadResources(response: DiscoveryResponse, callbacks: RulesTarget): LoadResult {
  let result: LoadResult;
  try {
    const sources = (response.resources ?? []).map((any, i) => {
      const typeUrl = any.type_url ?? any.typeUrl;
      if (typeUrl !== RATE_LIMIT_CONFIG_TYPE_URL) {
        throw new Error(`resource ${i} is a ${typeUrl ?? 'resource with no type'}, not a RateLimitConfig`);
      }
      return ruleSourceOf(decodeRateLimitConfig(any.value ?? new Uint8Array()), i);
    });
    result = parseRules(sources, { mergeDomains: callbacks.mergeDomains });
  } catch (error) {
    result = {
      ok: false,
      issues: [
        {
          code: 'ERR_SLUICE_RULES_LOAD_FAILED',
          message: `xds: ${(error as Error).message}`,
          file: 'xds',
          line: 0,
          column: 0,
        },
      ],
      files: [],
    };
  }
  if (result.ok) {
    try {
      callbacks.apply(result.ruleSet);
    } catch (error) {
      result = {
        ok: false,
        issues: [{ code: 'ERR_SLUICE_RULES_LOAD_FAILED', message: String(error), file: 'xds', line: 0, column: 0 }],
        files: [],
      };
    }
  }
  return result;
}
