-- Derivatives against central differences, shared by the specs of ops with hand-written rules.
local hl = require "halua"
local M = {}

-- an array's elements as a flat Lua table
function M.flat(x) return hl.reshape(x, {x.size}):totable() end

-- d f / d x by central differences in float64, shaped like x (f returns a 0-d array)
function M.numeric(f, x, eps)
  eps = eps or 1e-6
  local v, g = M.flat(x), {}
  for i = 1, #v do
    local p, m = {unpack(v)}, {unpack(v)}
    p[i], m[i] = v[i] + eps, v[i] - eps
    g[i] = (f(hl.reshape(hl.array(p, "float64"), x.shape)):item() - f(hl.reshape(hl.array(m, "float64"), x.shape)):item()) / (2 * eps)
  end
  return g
end

-- every element of `got` within tol * (1 + |want|) of the Lua table `want`
function M.close(got, want, tol, what)
  local g = M.flat(got)
  assert(#want == #g, string.format("%s: %d elements, expected %d", what, #g, #want))
  for i = 1, #g do
    assert(math.abs(g[i] - want[i]) <= tol * (1 + math.abs(want[i])),
           string.format("%s: element %d is %.17g, expected %.17g", what, i, g[i], want[i]))
  end
end

return M
