/**
 * The Lua of `'eventual'` mode. A window's count is a G-counter: a hash with, per region `r`, the field
 * `+r` (units that region took) and `-r` (units it gave back: refunds and resets). Only region `r`
 * ever increments its own two fields; the others only merge them, keeping the larger value. A merge is
 * therefore idempotent (replaying it changes nothing), commutative and monotonic, so duplicated,
 * reordered or replayed sync messages — after a partition, say — never count a request twice.
 * The window's total is Σ(+) − Σ(−), never below 0.
 *
 * Every script here runs in one region's Redis. A decision reads that region's view (its own fields,
 * exact, and the others' as of their last sync) and adds to its own field: one round trip, atomic.
 */
import { createHash } from 'node:crypto';
import { LUA_SOURCES } from '../redis/lua-sources.js';
import type { Script } from '../redis/scripts.js';

function script(name: string, source: string): Script {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

const PRELUDE = LUA_SOURCES['multi-region/eventual-prelude'];

/** Decides items in one region (see CHECK). */
export const EVENTUAL_CHECK = script('mr:eventual:check', PRELUDE + LUA_SOURCES['multi-region/eventual-check']);
/** Gives back units (into the region's own '-' field). */
export const EVENTUAL_REFUND = script('mr:eventual:refund', PRELUDE + LUA_SOURCES['multi-region/eventual-refund']);
/** Forgets what the region sees of a key. */
export const EVENTUAL_RESET = script('mr:eventual:reset', PRELUDE + LUA_SOURCES['multi-region/eventual-reset']);
/** Reads the region's own fields, for the sync loop. */
export const EVENTUAL_READ_OWN = script('mr:eventual:read', LUA_SOURCES['multi-region/eventual-read-own']);
/** Merges another region's fields (max per field). */
export const EVENTUAL_MERGE = script('mr:eventual:merge', PRELUDE + LUA_SOURCES['multi-region/eventual-merge']);
