-- The block a committed rejection writes when its policy blocks (blockMs > 0).
  if ok == 0 and commit and blockMs > 0 then
    WRITE('SET', bkey, FMT(NOW + blockMs), 'PX', FMT(blockMs + GRACE))
  end
