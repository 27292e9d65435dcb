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

-- For f real-valued of complex z = x + iy, JAX's gradient df/dx - i df/dy (docs/complex.md), by
-- central differences in complex128 of each part: a table of {re, im} pairs in z's order
function M.numeric_complex(f, z, eps)
  eps = eps or 1e-6
  local flat = M.flat(z)
  local function at(k, dre, dim)
    local re, im = {}, {}
    for i, p in ipairs(flat) do re[i], im[i] = p[1], p[2] end
    re[k], im[k] = re[k] + dre, im[k] + dim
    return f(hl.reshape(hl.complex(hl.array(re, "float64"), hl.array(im, "float64")), z.shape):astype(z.dtype)):item()
  end
  local g = {}
  for k = 1, #flat do
    g[k] = {(at(k, eps, 0) - at(k, -eps, 0)) / (2 * eps), -(at(k, 0, eps) - at(k, 0, -eps)) / (2 * eps)}
  end
  return g
end

-- every {re, im} element of the complex array `got` within tol * (1 + |want part|) of want's pairs
function M.close_pairs(got, want, tol, what)
  local g = M.flat(got)
  assert(#g == #want, string.format("%s: %d elements, expected %d", what, #g, #want))
  for k = 1, #g do
    for j = 1, 2 do
      assert(math.abs(g[k][j] - want[k][j]) <= tol * (1 + math.abs(want[k][j])),
             string.format("%s: element %d is %.10g%+.10gi, expected %.10g%+.10gi", what, k, g[k][1], g[k][2], want[k][1], want[k][2]))
    end
  end
end

return M
