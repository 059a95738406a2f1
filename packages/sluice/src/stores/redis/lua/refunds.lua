-- Gives back what items took (a refund of each item's cost, by its algorithm).
-- ARGV[3] = policy count, then per item: cost, age (how long ago the units were taken, ms), policy index; then
-- the policies. An age, not a time: under the server clock NOW is Redis's, not the caller's.
local ps, nargs = read_policies()
local k, i = 1, 4
while i <= nargs do
  local p = ps[tonumber(ARGV[i + 2])]
  REFUND[p.alg](KEYS[k], p, tonumber(ARGV[i]), NOW - tonumber(ARGV[i + 1]))
  i = i + 3
  k = k + 2
end
return 1
