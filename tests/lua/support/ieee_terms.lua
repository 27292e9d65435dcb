-- Float terms that IEEE arithmetic does not cancel, with NumPy's values: jit_spec and
-- export_spec check that a compiled program computes them as NumPy does (hl_lower_ieee).
local hl = require "halua"

local M = {}
local nan = 0 / 0

M.x = hl.array({1, 1 / 0, -1 / 0, nan, 0, 2})

-- x - x, (x + 2) - x, x / x and sign(1 / (x - 2)): four results
function M.terms(a) return a - a, (a + 2) - a, a / a, hl.sign(1 / (a - 2)) end

-- NumPy's values of the four terms at M.x
M.want = {
  {0, nan, nan, nan, 0, 0},
  {2, nan, nan, nan, 2, 2},
  {1, nan, nan, nan, nan, 1},
  {-1, 0, 0, nan, -1, 1},
}

-- results[1..4] are the terms of M.x; what names the program in a failure
function M.check(results, what)
  for k, w in ipairs(M.want) do
    local got = results[k]:totable()
    for i, v in ipairs(w) do
      local ok = (v ~= v and got[i] ~= got[i]) or got[i] == v
      assert(ok, string.format("%s: term %d at x = %s gave %s, NumPy %s", what, k, tostring(M.x[i]:item()), tostring(got[i]), tostring(v)))
    end
  end
end

return M
