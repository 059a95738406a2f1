-- The block check of one item (the memory store's decide()): a key blocked by an earlier rejection is
-- rejected until the block ends, without running the algorithm. Sets `blocked`.
  local blocked = false
  if blockMs > 0 then
    READ_CLOCK()
    local bv = call('GET', bkey)
    if bv then
      local untilMs = tonumber(bv)
      if untilMs > NOW then ok, remaining, reset, retry, reason, blocked = 0, 0, untilMs - NOW, untilMs - NOW, 2, true end
    end
  end
