-- Skips the sliding log's expired entries (older than `period` before NOW) in `blob` of `n` bytes: sets
-- `total` (the header's units), `units` (the expired ones') and `i` (the byte position of the first live entry).
  local total, head = struct.unpack(LOG_HEADER, blob)
  local oldest = NOW - period
  local units, i = 0, head
  while i < n do
    local ts, u = struct.unpack(LOG_ENTRY, blob, i)
    if ts > oldest then break end
    units = units + u
    i = i + LOG_ENTRY_SIZE
  end
