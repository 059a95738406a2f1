-- An algorithm's check step wrapped in a function of (key, policy table, cost, commit) -> decision table,
-- for the multi-limit script (lua.ts defines one per ALGORITHM). The step itself, CHECK_STEP (the
-- check-*.lua files), is straight-line code that runs inside `repeat … until true` (so `break` ends it)
-- and sees these locals:
--   in:  key, limit, period, capacity, scale, T (intervalTicks), capT (capacityTicks), cost, commit,
--        NOW (nil under the server clock until something reads it: READ_CLOCK), SERVER, GRACE, PXAT,
--        WCALL, WERR, and sub, find, sformat, floor, ceil, max, min, call, tonumber, type
--   out: ok (1/0), remaining, reset, retry (-1 = never), reason (0, 1 = cost-exceeds-capacity),
--        delay (-1 = none); they start as 0, 0, 0, 0, 0, -1.
-- It writes the key only when the request is allowed, `commit` is set and cost > 0, through WCALL (see
-- prelude.lua): when Redis refuses the write, the step sets reason 3 and ends, and the item is left
-- undecided for the caller's failure policy.
-- Under the server clock every state key expires at an instant its value determines (PUT_AT): the
-- bucket's drain, the window's end, the arrival time, the newest log entry plus the period. A step that
-- finds a stored key while NOW is still unset takes the time from that key's PTTL (TIME_FROM_EXPIRY)
-- instead of TIME: one PTTL costs Redis a fraction of what TIME and parsing its two-string reply do
-- (10,400 instructions of a lone token-bucket decision's 91,000).
CHECK[ALGORITHM] = function(key, p, cost, commit)
  local limit, period, capacity, scale, T, capT = p.limit, p.period, p.capacity, p.scale, p.T, p.capT
  local ok, remaining, reset, retry, reason, delay = 0, 0, 0, 0, 0, -1
  repeat
    CHECK_STEP()
  until true
  if reason == 3 then ok = 0 end
  return {ok, remaining, reset, retry, reason, delay}
end
