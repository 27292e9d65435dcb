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

suite("NumPy-style functions on complex arrays against NumPy", function(case)
  for _, dt in ipairs(DT) do
    -- NaN in either part; -inf - 2i is below -inf + 0i (the NaN's identity must be below both)
    local z = cx({1, nan, 3, -1, 2, 0, math.huge, -math.huge, 1, 3, nan, 2},
                 {2, 0, -1, nan, 5, 1, 0, -2, 1, 4, 1, -3}, dt)
    local z34 = hl.reshape(z, {3, 4})
    local zn = cx({nan, 1, 0, 2, 1, -1}, {1, nan, nan, 0, 3, 2}, dt)   -- row 1 all NaN
    local zn23 = hl.reshape(zn, {2, 3})
    for _, f in ipairs {"nanmax", "nanmin"} do
      case(dt .. " " .. f, function() return hl[f](z) end, "np." .. f .. "(a)", {z})
      case(dt .. " " .. f .. " axis 2", function() return hl[f](z34, 2) end, "np." .. f .. "(a, axis=1)", {z34})
      case(dt .. " " .. f .. " axis 1 keepdims", function() return hl[f](z34, 1, true) end, "np." .. f .. "(a, axis=0, keepdims=True)", {z34})
      case(dt .. " " .. f .. ": an all-NaN slice gives its first element", function() return hl[f](zn23, 2) end,
           "np." .. f .. "(a, axis=1)", {zn23})
    end
    local w = crand({4, 5}, dt)
    local wn = hl.where(hl.array({{true, false, false, true, false}, {false, false, false, false, false},
                                  {false, true, false, false, false}, {false, false, false, false, true}}), hl.complex(nan, 1):astype(dt), w)
    case(dt .. " nansum", function() return hl.nansum(wn) end, "np.nansum(a)", {wn})
    case(dt .. " nansum axis 1", function() return hl.nansum(wn, 1) end, "np.nansum(a, axis=0)", {wn})
    case(dt .. " nanmean axis 2", function() return hl.nanmean(wn, 2) end, "np.nanmean(a, axis=1)", {wn})
    case(dt .. " nanvar (a real array)", function() return hl.nanvar(wn) end, "np.nanvar(a)", {wn})
    case(dt .. " nanvar axis 2 ddof 1", function() return hl.nanvar(wn, 2, false, 1) end, "np.nanvar(a, axis=1, ddof=1)", {wn})
    case(dt .. " nanstd axis 1 keepdims", function() return hl.nanstd(wn, 1, true) end, "np.nanstd(a, axis=0, keepdims=True)", {wn})
    -- the orderings: ties in the real parts
    local m = cint({4, 6}, dt)
    case(dt .. " median (even count)", function() return hl.median(m, 2) end, "np.median(a, axis=1)", {m})
    case(dt .. " median (odd count)", function() return hl.median(m[{{}, {1, 5}}], 2) end, "np.median(a[:, :5], axis=1)", {m})
    case(dt .. " median of all", function() return hl.median(m) end, "np.median(a)", {m})
    case(dt .. " median: a lane with a NaN is NaN", function() return hl.median(zn23, 2) end, "np.median(a, axis=1)", {zn23})
    local q = hl.array({0, 0.3, 0.75, 1}, "float64")
    -- halua keeps complex64 (as it keeps float32); NumPy's float64 q promotes it to complex128
    local keep = {dtype = dt}
    for _, method in ipairs {"linear", "lower", "higher", "nearest", "midpoint"} do
      case(dt .. " quantile " .. method, function() return hl.quantile(m, q, 2, false, method) end,
           "np.quantile(a, b, axis=1, method='" .. method .. "')", {m, q}, keep)
    end
    case(dt .. " percentile keepdims", function() return hl.percentile(m, 40, 1, true) end,
         "np.percentile(a, 40, axis=0, keepdims=True)", {m}, keep)
    case(dt .. " trapezoid", function() return hl.trapezoid(m, nil, 0.5) end, "np.trapz(a, dx=0.5)", {m})
    local xs = hl.array({0, 1, 3, 4, 6, 7}, PART[dt])
    case(dt .. " trapezoid at points", function() return hl.trapezoid(m, xs) end, "np.trapz(a, b)", {m, xs}, {dtype = false})
    local fp = cx({0, 1, 2, -1}, {1, 0, 2, 3}, dt)
    local xi, xp = hl.array({-1, 0.5, 1.25, 3, 4}, PART[dt]), hl.array({0, 1, 2, 3}, PART[dt])
    -- (NumPy's interp computes in complex128)
    case(dt .. " interp of complex values, left and right", function() return hl.interp(xi, xp, fp, hl.complex(0, 5), 7) end,
         "np.interp(b, c, a, left=5j, right=7)", {fp, xi, xp}, {dtype = false})
  end
  local z = hl.complex(np.rand({3, 5}, -2, 2, "float64"), np.rand({3, 5}, -2, 2, "float64"))
  local zq = hl.where(hl.array({{false, true, false, false, false}, {false, false, false, false, false}, {true, false, false, true, false}}),
                      hl.complex(1, nan), z)
  local f = hl.jit(function(u) return hl.nanmax(u, 2), hl.nanmean(u, 1), hl.median(u, 2), hl.nanvar(u) end)
  for n, e in ipairs {"np.nanmax(a, axis=1)", "np.nanmean(a, axis=0)", "np.median(a, axis=1)", "np.nanvar(a)"} do
    case("jit: " .. e, function() return select(n, f(zq)) end, e, {zq})
  end
  case("vmap: nanmin per row", function() return hl.vmap(function(u) return hl.nanmin(u) end)(zq) end, "np.nanmin(a, axis=1)", {zq})
  case("vmap: quantile per row", function() return hl.vmap(function(u) return hl.quantile(u, 0.3) end)(z) end,
       "np.quantile(a, 0.3, axis=1)", {z})
end)

describe("NumPy-style functions on complex arrays: gradients and errors", function()
  local z = hl.complex(hl.array({1.2, -0.7, 0.3, 2.1, 0.9}, "float64"), hl.array({-0.4, 1.1, 0.9, -1.6, 0.2}, "float64"))
  local w = hl.complex(hl.array({0.5, -1.5}, "float64"), hl.array({1, 0.5}, "float64"))
  local fs = {
    {"nansum", function(u) return hl.real(hl.nansum(u) * w[1]) end},
    {"nanmean", function(u) return hl.imag(hl.nanmean(u) * w[2]) end},
    {"nanvar", function(u) return hl.nanvar(u) end},
    {"nanmax and nanmin", function(u) return hl.real(hl.nanmax(u) * w[1]) + hl.imag(hl.nanmin(u) * w[2]) end},
    {"quantile", function(u) return hl.sum(hl.real(hl.quantile(u, hl.array({0.3, 0.6}, "float64")) * w)) end},
    {"median", function(u) return hl.real(hl.median(u[{{1, 4}}]) * w[2]) end},
  }
  for _, c in ipairs(fs) do
    it(c[1] .. " matches central differences", function()
      diff_check.close_pairs(hl.grad(c[2])(z), diff_check.numeric_complex(c[2], z), 1e-6, c[1])
    end)
  end
  it("bincount and histogram refuse complex values as NumPy's bincount does, naming the cast", function()
    local c = hl.complex(hl.array({1, 2}), 1)
    local ok, e = pcall(hl.bincount, hl.array({1, 2}, "int32"), c)
    assert.is_false(ok)
    assert.matches("bincount: complex64 to float64 would drop the imaginary part; take hl.real(x) or hl.abs(x) first", tostring(e), 1, true)
    ok, e = pcall(hl.histogram, c)
    assert.is_false(ok)
    assert.matches("histogram: complex64 to float64 would drop the imaginary part", tostring(e), 1, true)
  end)
end)
