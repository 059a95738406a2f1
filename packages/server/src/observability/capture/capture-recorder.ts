/**
 * Turns sampled decisions into capture records (the NDJSON of `sluice replay`): the server's time, domain,
 * descriptors (values hashed unless raw keys), cost, the deciding rule, the outcome and where it was asked;
 * for `/v1/check`, the item's key (hashed likewise) and the policy fields it was sent with.
 * Sampling is by key, so a sampled key has every one of its requests in the capture.
 */
import type { RateLimitRequest, RateLimitResponse, RuleSet } from 'sluice/rules';
import type { DecisionSource } from '../decision-events.js';
import { createValueMasker } from './capture-keys.js';
import { type CaptureOptions, DEFAULT_CAPTURE_SAMPLE } from './capture-options.js';

/** One `POST /v1/check` decision, as the check API hands it to the capture. */
export interface CheckDecisionInfo {
  /** The item's key, as sent. */
  readonly key: string;
  /** The item as sent: its policy fields are copied from it. */
  readonly item: Readonly<Record<string, unknown>>;
  readonly cost: number;
  /** The time the check was decided at. */
  readonly atMs: number;
  /** The resolved policy's id (`name~` first when named): the record's `rule`. */
  readonly policyId: string;
  readonly allowed: boolean;
}

/** The fields of a `/v1/check` item that make its policy (what a replay resolves again). */
export const CHECK_POLICY_FIELDS = ['limit', 'period', 'algorithm', 'burst', 'blockDuration', 'name'] as const;

/** Records decisions: asked `sampled` before each decision, then `record` for the sampled ones. */
export interface CaptureRecorder {
  /** True when the request's key is in the sample (always the same answer for one key). */
  sampled(request: RateLimitRequest): boolean;
  /** Writes one decision as a line. */
  record(
    request: RateLimitRequest,
    response: RateLimitResponse,
    source: DecisionSource,
    atMs: number,
    ruleSet: RuleSet,
  ): void;
  /** Writes one `/v1/check` decision as a line when its key is in the sample. */
  recordCheck(check: CheckDecisionInfo, ruleSet: RuleSet): void;
}

/** FNV-1a of `s` continued from `h`, then a separator (no closure: this runs for every decision). */
function mix(h: number, s: string): number {
  let x = h;
  for (let i = 0; i < s.length; i++) x = Math.imul(x ^ s.charCodeAt(i), 0x01000193);
  return Math.imul(x ^ 0x1f, 0x01000193);
}

/** FNV-1a over the request's domain and entries: the same key always lands on the same side of the sample. */
function keyHash(request: RateLimitRequest): number {
  let h = mix(0x811c9dc5, request.domain);
  const descriptors = request.descriptors;
  for (let d = 0; d < descriptors.length; d++) {
    const entries = (descriptors[d] as RateLimitRequest['descriptors'][number]).entries;
    for (let e = 0; e < entries.length; e++) {
      const entry = entries[e] as { key: string; value: string };
      h = mix(mix(h, entry.key), entry.value);
    }
  }
  return (h >>> 0) / 2 ** 32;
}

function decidingRule(response: RateLimitResponse): string | undefined {
  const s = response.statuses.find((x) => x.code === 'OVER_LIMIT') ?? response.statuses.find((x) => x.currentLimit);
  return s === undefined ? undefined : (s.ruleName ?? s.ruleId);
}

/** A recorder that hands each sampled record, as one JSON line, to `push`. */
export function createCaptureRecorder(options: CaptureOptions, push: (line: string) => void): CaptureRecorder {
  const sample = options.sample ?? DEFAULT_CAPTURE_SAMPLE;
  const mask = options.rawKeys === true ? undefined : createValueMasker(options.secret);
  const sampled = (request: RateLimitRequest) => sample >= 1 || (sample > 0 && keyHash(request) < sample);
  const record: CaptureRecorder['record'] = (request, response, source, atMs, ruleSet) => {
    const { domain } = request;
    const descriptors = request.descriptors.map((d) => ({
      entries: d.entries.map((e) => ({
        key: e.key,
        value: mask === undefined ? e.value : mask(ruleSet, domain, e.key, e.value),
      })),
    }));
    const rule = decidingRule(response);
    const line = {
      t: atMs,
      domain,
      descriptors,
      cost: request.hitsAddend || 1,
      outcome: response.overallCode,
      ...(rule === undefined ? {} : { rule }),
      src: source,
    };
    push(JSON.stringify(line));
  };
  const recordCheck: CaptureRecorder['recordCheck'] = (check, ruleSet) => {
    // Sampled by key, as descriptors are: a sampled key has every one of its checks in the capture.
    if (sample < 1 && (sample <= 0 || (mix(mix(0x811c9dc5, 'check'), check.key) >>> 0) / 2 ** 32 >= sample)) return;
    // Field order: the layout `sluice replay` reads without JSON.parse (t, check, cost, outcome, rule, src).
    const captured: Record<string, unknown> = {
      key: mask === undefined ? check.key : mask(ruleSet, '', 'check', check.key),
    };
    for (const field of CHECK_POLICY_FIELDS) {
      const value = check.item[field];
      if (typeof value === 'string' || typeof value === 'number') captured[field] = value;
    }
    const line = {
      t: check.atMs,
      check: captured,
      cost: check.cost,
      outcome: check.allowed ? 'OK' : 'OVER_LIMIT',
      rule: check.policyId,
      src: 'check',
    };
    push(JSON.stringify(line));
  };
  return { sampled, record, recordCheck };
}
