-- complex64 and complex128 (docs/complex.md): x:at(index arrays):mul/min/max(v) against NumPy's
-- np.multiply.at / np.minimum.at / np.maximum.at (repeated and negative indices, NaN parts, with
-- ranges and non-adjacent arrays), segment_max/min, eager, under jit and vmap, mul's gradient
-- against central differences; and the NumPy-style functions on complex arrays (nanmax, nanmin,
-- nansum, nanmean, nanvar, nanstd, median, quantile, percentile) against NumPy.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"
local diff_check = require "support.diff_check"

math.randomseed(4242)

local DT = {"complex64", "complex128"}
local PART = {complex64 = "float32", complex128 = "float64"}
local nan = 0 / 0

local function cx(re, im, dt) return hl.complex(hl.array(re, PART[dt]), hl.array(im, PART[dt])) end

-- small integer parts (ties in the real parts exercise the lexicographic order), shape s
local function cint(shape, dt)
  local n = 1
  for _, e in ipairs(shape) do n = n * e end
  local re, im = {}, {}
  for i = 1, n do re[i], im[i] = math.random(-2, 2), math.random(-3, 3) end
  return hl.reshape(cx(re, im, dt), shape)
end

local function crand(shape, dt) return hl.complex(np.rand(shape, -2, 2, PART[dt]), np.rand(shape, -2, 2, PART[dt])) end

-- index arrays in 1..n and -n..-1 with many repeats
local function indices(shape, n)
  local x = np.rand(shape, 1, n + 1, "int32")
  local v = hl.reshape(x, {x.size}):totable()
  for i = 1, #v do if math.random() < 0.3 then v[i] = v[i] - n - 1 end end
  return hl.reshape(hl.array(v, "int32"), shape)
end

local ufunc = {mul = "np.multiply.at", min = "np.minimum.at", max = "np.maximum.at"}
local function np_at(mode, key) return "(lambda o: (" .. ufunc[mode] .. "(o, " .. key .. ", c), o)[1])(a.copy())" end
local function np1(name) return "np.where(" .. name .. " < 0, " .. name .. ", " .. name .. " - 1)" end
local function at(x, key, mode, v) local u = x:at(key); return u[mode](u, v) end

suite("complex x:at(index arrays):mul/min/max against NumPy's ufunc.at", function(case)
  for _, dt in ipairs(DT) do
    for _, mode in ipairs {"mul", "min", "max"} do
      local name = dt .. " " .. mode
      local x, i, c1 = cint({5, 4}, dt), indices({9}, 5), cint({9, 4}, dt)
      case(name .. ": one array on axis 1, repeats", function() return at(x, i, mode, c1) end, np_at(mode, "(" .. np1("b") .. ",)"),
           {x, i, c1})
      local j, c2 = indices({9}, 4), cint({9}, dt)
      case(name .. ": two arrays", function() return at(x, {i, j}, mode, c2) end, np_at(mode, "(" .. np1("b") .. ", " .. np1("d") .. ")"),
           {x, i, c2, j})
      local x3, k, cn = cint({4, 5, 6}, dt), indices({2, 3}, 6), cint({2, 3, 5}, dt)
      local i3 = indices({3}, 4)
      case(name .. ": non-adjacent arrays", function() return at(x3, {i3, {}, k}, mode, cn) end,
           np_at(mode, "(" .. np1("b") .. ", slice(None), " .. np1("d") .. ")"), {x3, i3, cn, k})
      local cr = cint({3, 3, 6}, dt)
      case(name .. ": an array and a range", function() return at(x3, {i3, {2, 4}}, mode, cr) end,
           np_at(mode, "(" .. np1("b") .. ", slice(1, 4))"), {x3, i3, cr})
      local big, cb = crand({6}, dt), crand({40}, dt)
      local ib = indices({40}, 6)
      case(name .. ": 40 updates on 6 places (random parts)", function() return at(big, ib, mode, cb) end,
           np_at(mode, "(" .. np1("b") .. ",)"), {big, ib, cb})
    end
    -- NaN parts: NumPy's maximum and minimum keep the first NaN met, in index order
    local xn = cx({1, nan, 0, 2}, {1, 0, 3, 0}, dt)
    local iN = hl.array({1, 1, 1, 2, 3, 3, 4, 4, 4}, "int32")
    local cN = cx({1, nan, 0, 5, 1, 1, 7, 2, nan}, {2, 1, nan, 0, nan, 0, 0, 9, nan}, dt)
    for _, mode in ipairs {"min", "max"} do
      case(dt .. " " .. mode .. ": NaN parts as NumPy", function() return at(xn, iN, mode, cN) end, np_at(mode, "(b - 1,)"),
           {xn, iN, cN})
    end
    case(dt .. " mul: a scalar update, repeated", function() return at(xn, iN, "mul", 2) end, np_at("mul", "(b - 1,)"),
         {xn, iN, 2})
    -- segment_max/min: a run of ids reduced in NumPy's order, empty segments at the dtype's extreme
    local data, ids = cint({8}, dt), hl.array({1, 3, 3, 1, 3, 2, 5, 3}, "int32")
    case(dt .. " segment_max", function() return hl.segment_max(data, ids, 5) end,
         "(lambda o: (np.maximum.at(o, b - 1, a), o)[1])(np.full(5, -np.inf, a.dtype))", {data, ids})
    case(dt .. " segment_min", function() return hl.segment_min(data, ids, 5) end,
         "(lambda o: (np.minimum.at(o, b - 1, a), o)[1])(np.full(5, np.inf, a.dtype))", {data, ids})
  end
  -- jit and vmap: the same composition traced and batched
  local x, i, c = cint({5, 3}, "complex128"), indices({7}, 5), cint({7, 3}, "complex128")
  local f = hl.jit(function(u, ix, v) return u:at(ix):mul(v), u:at(ix):min(v), u:at(ix):max(v) end)
  for n, mode in ipairs {"mul", "min", "max"} do
    case("jit: " .. mode, function() return select(n, f(x, i, c)) end, np_at(mode, "(" .. np1("b") .. ",)"), {x, i, c})
  end
  local xs, cs = cint({3, 5}, "complex64"), cint({3, 7}, "complex64")
  local iv = indices({7}, 5)
  for _, mode in ipairs {"mul", "max"} do
    case("vmap over x and the updates: " .. mode,
         function() return hl.vmap(function(u, v) return at(u, iv, mode, v) end)(xs, cs) end,
         "np.stack([(lambda o: (" .. ufunc[mode] .. "(o, " .. np1("b") .. ", c[r]), o)[1])(a[r].copy()) for r in range(3)])",
         {xs, iv, cs})
  end
  local ib = hl.stack({indices({7}, 5), indices({7}, 5), indices({7}, 5)})
  local x1, c1 = cint({5}, "complex128"), cint({7}, "complex128")
  case("vmap over the index arrays: min",
       function() return hl.vmap(function(ix) return at(x1, ix, "min", c1) end)(ib) end,
       "np.stack([(lambda o: (np.minimum.at(o, " .. np1("b[r]") .. ", c), o)[1])(a.copy()) for r in range(3)])",
       {x1, ib, c1})
end)

describe("complex x:at(index arrays):mul gradients (JAX's convention)", function()
  local i = hl.array({2, 2, 1, -1, 2, 4}, "int32")
  local x = hl.complex(hl.array({1.2, -0.7, 0.3, 2.1}, "float64"), hl.array({-0.4, 1.1, 0.9, -1.6}, "float64"))
  local v = hl.complex(hl.array({0.5, -1.5, 2, 0.25, 0.8, -1}, "float64"), hl.array({1, 0.5, -0.75, 2, 0.3, 0.6}, "float64"))
  local w = hl.complex(hl.array({0.3, -1, 2, 0.5}, "float64"), hl.array({1.5, 0.2, -0.5, 1}, "float64"))
  it("with respect to x matches central differences, eagerly and under jit", function()
    local f = function(u) return hl.sum(hl.real(u:at(i):mul(v) * w)) end
    local want = diff_check.numeric_complex(f, x)
    diff_check.close_pairs(hl.grad(f)(x), want, 1e-6, "d/dx")
    diff_check.close_pairs(hl.jit(hl.grad(f))(x), want, 1e-6, "d/dx (jit)")
  end)
  it("with respect to the updates matches central differences", function()
    local f = function(u) return hl.sum(hl.real(x:at(i):mul(u) * w)) end
    diff_check.close_pairs(hl.grad(f)(v), diff_check.numeric_complex(f, v), 1e-6, "d/dv")
  end)
end)
