/** Descriptors that depend on nothing but the client address, worked out once per client and config. */
import type { HttpDomainDescriptors, RuleSet } from 'sluice/rules';

/** The `http:` actions whose entry depends on nothing but the client address and the config. */
const ADDRESS_ONLY_ACTIONS: ReadonlySet<string> = new Set(['remote_address', 'masked_remote_address', 'generic_key']);

/** Client keys remembered at most; past this the memory starts over (an address-spraying client costs no more). */
const DEFAULT_MAX_KEYS = 4096;

/**
 * The descriptors of a rule set's `http:` rules for one client key, remembered when those rules read
 * nothing of a request but its client address (`remote_address`, `masked_remote_address`, `generic_key`
 * actions only — the usual "N per client" gateway config). Then every request of one client makes the same
 * descriptors, and working them out again (a view of the request, an array and an object per domain,
 * descriptor and entry) and checking their lengths is work repeated on every request. A rule set whose
 * rules read headers, the path, the method or the query is never remembered. A reload (a new rule set)
 * starts over.
 *
 * The remembered descriptors are shared by every request of the key: the decision path only reads them.
 */
export class AddressDescriptors {
  private ruleSet: RuleSet | undefined;
  private addressOnly = false;
  private readonly byKey = new Map<string, readonly HttpDomainDescriptors[]>();

  constructor(private readonly maxKeys = DEFAULT_MAX_KEYS) {}

  /** The remembered descriptors of `key` under `ruleSet`; undefined when not remembered (work them out). */
  get(ruleSet: RuleSet, key: string): readonly HttpDomainDescriptors[] | undefined {
    if (ruleSet !== this.ruleSet) this.plan(ruleSet);
    return this.addressOnly ? this.byKey.get(key) : undefined;
  }

  /** Remembers `groups`, worked out (and checked) for `key` under the rule set last given to {@link get}. */
  set(key: string, groups: readonly HttpDomainDescriptors[]): void {
    if (!this.addressOnly) return;
    if (this.byKey.size >= this.maxKeys) this.byKey.clear();
    this.byKey.set(key, groups);
  }

  private plan(ruleSet: RuleSet): void {
    this.ruleSet = ruleSet;
    this.byKey.clear();
    this.addressOnly = true;
    for (const rules of ruleSet.domains.values()) {
      for (const rateLimit of rules.http) {
        for (const action of rateLimit.actions) {
          if (!ADDRESS_ONLY_ACTIONS.has(action.type)) this.addressOnly = false;
        }
      }
    }
  }
}
