-- Gives back what items took (a refund of each item's cost, by its algorithm).
-- ARGV[3] = policy count, then per item: cost, policy index; then the policies.
local ps, nargs = read_policies()
local k, i = 1, 4
while i <= nargs do
  local p = ps[tonumber(ARGV[i + 1])]
  REFUND[p.alg](KEYS[k], p, tonumber(ARGV[i]))
  i = i + 2
  k = k + 2
end
return 1
