-- complex64 and complex128, phase 2 (docs/complex.md): hypot-scaled abs and Smith's division at
-- extreme magnitudes, pow, sign, expm1, log1p, the inverse trigonometric and hyperbolic functions
-- (on and near their branch cuts), prod, cumsum, cumprod, and NumPy's lexicographic max, min,
-- argmax, argmin, sort and argsort; values against NumPy, under jit and vmap, and gradients
-- (JAX's convention) against central differences.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"
local diff_check = require "support.diff_check"

math.randomseed(2222)

local DT = {"complex64", "complex128"}
local PART = {complex64 = "float32", complex128 = "float64"}
local TRIG = {"arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"}

local function crand(shape, dt, lo, hi)
  lo, hi = lo or -2, hi or 2
  return hl.complex(np.rand(shape, lo, hi, PART[dt]), np.rand(shape, lo, hi, PART[dt]))
end

-- a complex array of dtype dt from lists of parts
local function cx(re, im, dt)
  return hl.complex(hl.array(re, PART[dt]), hl.array(im, PART[dt]))
end

-- small integer parts: ties in the real parts for the orderings
local function cint(shape, dt)
  local n = 1
  for _, e in ipairs(shape) do n = n * e end
  local re, im = {}, {}
  for i = 1, n do re[i], im[i] = math.random(-2, 2), math.random(-3, 3) end
  return hl.reshape(cx(re, im, dt), shape)
end

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(e)
end

local nan, inf = 0 / 0, math.huge

suite("complex abs and division at extreme magnitudes", function(case)
  local far = {complex64 = {1e30, 1e-30, 3e38}, complex128 = {1e300, 1e-300, 1.7e308}}
  for _, dt in ipairs(DT) do
    local big, small, top = far[dt][1], far[dt][2], far[dt][3]
    local z = cx({3, big, -big, small, 0, top, 0, inf, nan, -inf, 1}, {4, big, 2 * big, small, -small, top, 0, nan, 1, 0, nan}, dt)
    case(dt .. " abs as hypot (no overflow, no underflow, inf over nan)", function() return hl.abs(z) end, "np.abs(a)", {z})
    local a = cx({big, small, 1, big, 3, -small, 1, 0, 2, 0}, {big, small, 1, -big, 4, small, 0, 0, 1, 1}, dt)
    local b = cx({big, small, big, small * 4, 1, small, 0, 0, 0, 0}, {big, 2 * small, big, big, 2, -small, 0, 0, 0, 0}, dt)
    case(dt .. " Smith's division, and by zero as NumPy", function() return a / b end, "a / b", {a, b})
    case(dt .. " reciprocal at extreme magnitudes", function() return hl.reciprocal(b[{{1, 6}}]) end, "np.reciprocal(b[:6])", {a, b})
    case(dt .. " sqrt and log of huge and tiny values", function() return hl.concatenate({hl.sqrt(z[{{1, 7}}]), hl.log(z[{{1, 6}}])}) end,
         "np.concatenate([np.sqrt(a[:7]), np.log(a[:6])])", {z})
  end
end)

suite("complex pow, sign, expm1, log1p", function(case)
  for _, dt in ipairs(DT) do
    local p = PART[dt]
    for _, s in ipairs {{}, {3, 4}} do
      local a, b = crand(s, dt), crand(s, dt, -1.5, 1.5)
      local x = np.rand(s, 0.5, 2, p)
      local tag = " " .. dt .. " [" .. table.concat(s, ",") .. "]"
      case("complex ** complex" .. tag, function() return a ^ b end, "a ** b", {a, b}, {rtol = 1e-5, atol = 1e-5})
      case("complex ** 2 is a * a" .. tag, function() return a ^ 2 end, "a ** 2", {a})
      case("complex ** -3" .. tag, function() return a ^ -3 end, "a ** -3", {a}, {rtol = 1e-5, dtype = dt})
      case("complex ** 0.5" .. tag, function() return hl.pow(a, 0.5) end, "a ** np." .. p .. "(0.5)", {a})
      case("a real array ** complex" .. tag, function() return x ^ b end, "a ** b", {x, b}, {rtol = 1e-5})
      case("2 ** complex" .. tag, function() return 2 ^ a end, "np." .. dt .. "(2) ** a", {a}, {rtol = 1e-5})
      case("sign (NumPy 2's z / |z|)" .. tag, function() return hl.sign(a) end, "a / np.abs(a)", {a})
      case("expm1" .. tag, function() return hl.expm1(a) end, "np.expm1(a)", {a})
      case("log1p" .. tag, function() return hl.log1p(a) end, "np.log1p(a)", {a})
    end
    local a = cx({0, 0, 0, 0, 0, 1, inf, nan, 2, -2, 0.5}, {0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3}, dt)
    local b = cx({0, 2, -1, 0, 0.5, 0, 0, 0, 10, 7, -20}, {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0}, dt)
    -- (0 ** (0.5 + i) is 0, NumPy 2's value; NumPy 1 gave NaN)
    case(dt .. " pow's special values: 0 ** 0 = 1, 0 ** 2 = 0 ** (0.5 + i) = 0, 0 ** -1 and 0 ** i NaN, x ** 0 = 1",
         function() return a ^ b end, "np.where((a == 0) & (b.real > 0), 0, a ** b)", {a, b})
    case(dt .. " sign at 0 is 0", function() return hl.sign(cx({0, 3, 0}, {0, 0, -2}, dt)) end, "np.array([0, 1, -1j])", {}, {dtype = dt})
    local tiny = cx({1e-10, -3e-9, 0, 2e-12}, {1e-10, 0, 5e-9, -7e-12}, dt)
    case(dt .. " expm1 keeps tiny values", function() return hl.expm1(tiny) end, "np.expm1(a)", {tiny})
    -- (NumPy's own log1p rounds 1 + z; its series is exact here)
    case(dt .. " log1p keeps tiny values", function() return hl.log1p(tiny) end, "a - a**2 / 2 + a**3 / 3", {tiny})
    local edge = cx({-1, -2, 1e30, -0.5, 0.2}, {0, 0, 1e30, 0.9, -0.6}, dt)
    case(dt .. " log1p at -1, on the cut, huge, and near |1 + z| = 1", function() return hl.log1p(edge) end, "np.log1p(a)", {edge},
         {rtol = 1e-5})
  end
end)

suite("complex inverse trigonometric and hyperbolic functions", function(case)
  for _, dt in ipairs(DT) do
    local z = crand({4, 5}, dt, -3, 3)
    for _, f in ipairs(TRIG) do
      case(dt .. " " .. f, function() return hl[f](z) end, "np." .. f .. "(a)", {z}, {rtol = 1e-5})
    end
    -- on the cuts (the real axis past +-1, the imaginary axis past +-i) from both sides of
    -- zero's sign, just off them, and at the branch points and 0
    local re = {2, 2, -2, -2, 1.5, -1.5, 2, -2, 0, -0.0, 0, -0.0, 1e-6, -1e-6, 1, -1, 0, 0, 0, 0.5, 5e3, -1e9}
    local im = {0, -0.0, 0, -0.0, 1e-6, -1e-6, 1e-6, -1e-6, 2, 2, -2, -2, 2, -2, 0, 0, 1, -1, 0, 0, 0, 3e9}
    local cut = cx(re, im, dt)
    for _, f in ipairs(TRIG) do
      case(dt .. " " .. f .. " on and near its cuts", function() return hl[f](cut) end, "np." .. f .. "(a)", {cut}, {rtol = 1e-5})
    end
    local sq = cx({-4, -4, -1, -1}, {0, -0.0, 0, -0.0}, dt)
    case(dt .. " sqrt and log take the cut's side from the sign of zero", function() return hl.concatenate({hl.sqrt(sq), hl.log(sq)}) end,
         "np.concatenate([np.sqrt(a), np.log(a)])", {sq})
    local small = cx({1e-9, -2e-9, 0}, {3e-9, 0, -1e-9}, dt)
    for _, f in ipairs(TRIG) do
      if f ~= "arccos" and f ~= "arccosh" then
        case(dt .. " " .. f .. " keeps tiny values", function() return hl[f](small) end, "np." .. f .. "(a)", {small}, {rtol = 1e-6})
      end
    end
    case(dt .. " asin, acos, atan are the same functions", function() return hl.asin(z) + hl.acos(z) * 2 + hl.atan(z) end,
         "np.arcsin(a) + 2 * np.arccos(a) + np.arctan(a)", {z}, {rtol = 1e-5})
  end
  for _, p in ipairs {"float32", "float64"} do
    local x = hl.array({-30, -2, -0.5, 0, 1e-9, 0.5, 3, 1e5, 1e10}, p)
    case(p .. " asinh", function() return hl.asinh(x) end, "np.arcsinh(a)", {x})
    local y = hl.array({0.5, 1, 1 + 1e-6, 2, 10, 1e5, 1e10}, p)
    case(p .. " acosh (NaN below 1)", function() return hl.acosh(y) end, "np.arccosh(a)", {y})
    local t = hl.array({-1, -0.9, -1e-9, 0, 0.25, 0.999, 1, 2}, p)
    case(p .. " atanh (inf at 1, NaN past it)", function() return hl.atanh(t) end, "np.arctanh(a)", {t})
  end
  local i = hl.array({1, 2, 3}, "int32")
  case("asinh of int32 is float32", function() return hl.arcsinh(i) end, "np.arcsinh(a).astype(np.float32)", {i})
end)

suite("complex prod, cumsum, cumprod", function(case)
  for _, dt in ipairs(DT) do
    local z = crand({3, 5, 2}, dt, -1.2, 1.2)
    case(dt .. " prod", function() return hl.prod(z) end, "np.prod(a)", {z}, {rtol = 1e-5})
    case(dt .. " prod axis 2 (odd)", function() return hl.prod(z, 2) end, "np.prod(a, 1)", {z}, {rtol = 1e-5})
    case(dt .. " prod axes {1, -1} keepdims", function() return hl.prod(z, {1, -1}, true) end, "np.prod(a, (0, 2), keepdims=True)", {z},
         {rtol = 1e-5})
    case(dt .. " z:prod(-1)", function() return z:prod(-1) end, "np.prod(a, -1)", {z}, {rtol = 1e-5})
    case(dt .. " prod over an empty axis is 1", function() return hl.prod(hl.zeros({2, 0}, dt), 2) end, "np.ones(2, np." .. dt .. ")", {})
    case(dt .. " cumsum axis 2", function() return hl.cumsum(z, 2) end, "np.cumsum(a, 1)", {z}, {rtol = 1e-5})
    case(dt .. " cumprod", function() return hl.cumprod(z) end, "np.cumprod(a)", {z}, {rtol = 1e-5, atol = 1e-5})
    case(dt .. " cumprod axis -1", function() return z:cumprod(-1) end, "np.cumprod(a, -1)", {z}, {rtol = 1e-5})
  end
end)

suite("complex orderings (NumPy's: real part, then imaginary part)", function(case)
  for _, dt in ipairs(DT) do
    local z = cint({4, 6}, dt)
    for _, f in ipairs {"max", "min"} do
      case(dt .. " " .. f, function() return hl[f](z) end, "np." .. f .. "(a)", {z})
      case(dt .. " " .. f .. " axis 2", function() return hl[f](z, 2) end, "np." .. f .. "(a, 1)", {z})
      case(dt .. " " .. f .. " axes {1, 2} keepdims", function() return hl[f](z, {1, 2}, true) end, "np." .. f .. "(a, (0, 1), keepdims=True)", {z})
      case(dt .. " arg" .. f .. " (1-based, first of ties)", function() return hl["arg" .. f](z) end, "np.arg" .. f .. "(a) + 1", {z})
      case(dt .. " arg" .. f .. " axis 1", function() return hl["arg" .. f](z, 1) end, "np.arg" .. f .. "(a, 0) + 1", {z})
      case(dt .. " arg" .. f .. " axis -1 keepdims", function() return z["arg" .. f](z, -1, true) end,
           "np.arg" .. f .. "(a, -1, keepdims=True) + 1", {z})
    end
    case(dt .. " sort", function() return hl.sort(z) end, "np.sort(a)", {z})
    case(dt .. " sort axis 1", function() return z:sort(1) end, "np.sort(a, 0)", {z})
    case(dt .. " argsort (stable)", function() return hl.argsort(z) end, "np.argsort(a, kind='stable') + 1", {z})
    case(dt .. " argsort axis 1", function() return hl.argsort(z, 1) end, "np.argsort(a, 0, kind='stable') + 1", {z})
    -- NaN parts: sorted last as R + nanj, nan + Rj, nan + nanj; the first one is max and min
    local w = cx({3, 1, nan, 2, 1, nan, -1, 2, nan, 0}, {1, nan, 0, 0, 2, nan, 5, nan, -1, 0}, dt)
    case(dt .. " sort with NaN parts", function() return hl.sort(w) end, "np.sort(a)", {w})
    case(dt .. " argsort with NaN parts", function() return hl.argsort(w) end, "np.argsort(a, kind='stable') + 1", {w})
    case(dt .. " max with NaN parts", function() return hl.max(w) end, "np.max(a)", {w})
    case(dt .. " argmin with NaN parts", function() return hl.argmin(w[{{3, 10}}]) end, "np.argmin(a[2:]) + 1", {w})
    local u, v = cint({5, 6}, dt), cint({5, 6}, dt)
    local numpy_name = {lt = "less", le = "less_equal", gt = "greater", ge = "greater_equal", maximum = "maximum", minimum = "minimum"}
    for f, g in pairs(numpy_name) do
      case(dt .. " " .. f .. " (ties in the real parts)", function() return hl[f](u, v) end, "np." .. g .. "(a, b)", {u, v})
      case(dt .. " " .. f .. " with NaN parts", function() return hl[f](w, w[{{-1, 1, -1}}]) end, "np." .. g .. "(a, a[::-1])", {w})
    end
    case(dt .. " at(range):mul and :max", function() return u:at({{2, 3}}):mul(cx({2}, {-1}, dt)):at({{}, 1}):max(cx({0}, {9}, dt)) end,
         "(lambda b: (b.__setitem__(slice(1, 3), b[1:3] * np." .. dt .. "(2 - 1j)), b.__setitem__((slice(None), 0), " ..
         "np.maximum(b[:, 0], np." .. dt .. "(9j))), b)[2])(a.copy())", {u})
    case(dt .. " clip", function() return hl.clip(u, cx({-1}, {1}, dt), cx({1}, {0}, dt)) end,
         "np.minimum(np.maximum(a, np." .. dt .. "(-1 + 1j)), np." .. dt .. "(1))", {u})
    local fin = cx({1, 1, 1}, {-inf, 2, -inf}, dt)
    case(dt .. " argmax with infinite parts", function() return hl.argmax(fin) end, "np.argmax(a) + 1", {fin})
  end
end)

describe("complex functions under jit and vmap", function()
  -- (one pipeline per function: the compositions are large, and Halide's compile time grows
  -- faster than their size)
  local fs = {
    pow = function(u, v) return u ^ v end, int_pow = function(u) return u ^ 3 + u ^ -2 end, sign = hl.sign, expm1 = hl.expm1,
    log1p = hl.log1p, asin = hl.asin, acos = hl.acos, atan = hl.atan, asinh = hl.asinh, acosh = hl.acosh, atanh = hl.atanh,
    abs_div = function(u, v) return hl.abs(u / v) end, prod = function(u) return hl.prod(u, 2) end,
    max = function(u) return hl.max(u, 1) end, argmin = function(u) return hl.argmin(u, 2) end, sort = function(u) return hl.sort(u, 1) end,
    cumprod = function(u) return hl.cumprod(u, 2) end,
  }
  for name, f in pairs(fs) do
    it(name .. " gives the eager values under jit", function()
      local a, b = crand({3, 4}, "complex64"), crand({3, 4}, "complex64", -1, 1)
      local e, j = f(a, b), hl.jit(f)(a, b)
      assert.are.equal(e.dtype, j.dtype)
      if e.dtype == "int64" then assert.are.same(e:totable(), j:totable())
      elseif e.dtype == "float32" then diff_check.close(j, diff_check.flat(e), 1e-5, name)
      else diff_check.close_pairs(j, diff_check.flat(e), 1e-5, name) end
    end)
  end
  it("map over a leading axis as a loop would", function()
    for _, dt in ipairs(DT) do
      local z, w = crand({4, 5}, dt), crand({5}, dt, 0.5, 1)
      local f = function(u) return hl.asin(u) ^ w + hl.sign(u) - u ^ 2, hl.prod(u), hl.max(u), hl.sort(u), hl.argmax(u) end
      local r = {hl.vmap(f)(z)}
      local j = {hl.jit(hl.vmap(function(u) return u ^ w, hl.prod(u), hl.max(u), hl.sort(u), hl.argmax(u) end))(z)}
      for i = 1, 4 do
        local e = {f(z[{i}])}
        for k = 1, #e do
          if e[k].dtype == "int64" then
            assert.are.same(e[k]:totable(), r[k][{i}]:totable())
            assert.are.same(e[k]:totable(), j[k][{i}]:totable())
          else
            local want = diff_check.flat(e[k])
            diff_check.close_pairs(r[k][{i}], want, 1e-5, dt .. " vmap result " .. k)
            if k > 1 then diff_check.close_pairs(j[k][{i}], want, 1e-5, dt .. " jit of vmap result " .. k) end
          end
        end
      end
    end
  end)
end)

describe("complex gradients of the phase 2 functions (JAX's convention)", function()
  local w = hl.complex(hl.array({0.5, -1.5, 2, 0.25}, "float64"), hl.array({1, 0.5, -0.75, 2}, "float64"))
  local z = hl.complex(hl.array({1.2, -0.7, 0.3, 2.1}, "float64"), hl.array({-0.4, 1.1, 0.9, -1.6}, "float64"))
  local function rw(f) return function(u) return hl.sum(hl.real(f(u) * w)) end end
  local fs = {
    {"abs(z / w)", function(u) return hl.sum(hl.abs(u / w)) end},
    {"real(w / z)", rw(function(u) return 1 / u end)},
    {"z ** w", rw(function(u) return u ^ w end)},
    {"w ** z", rw(function(u) return w ^ u end)},
    {"z ** 3", rw(function(u) return u ^ 3 end)},
    {"z ** -2", rw(function(u) return u ^ -2 end)},
    {"z ** 2.5", rw(function(u) return u ^ 2.5 end)},
    {"2 ** z", rw(function(u) return 2 ^ u end)},
    {"sign", rw(hl.sign)},
    {"expm1", rw(hl.expm1)},
    {"log1p", rw(hl.log1p)},
    {"asin", rw(hl.asin)}, {"acos", rw(hl.acos)}, {"atan", rw(hl.atan)},
    {"asinh", rw(hl.asinh)}, {"acosh", rw(hl.acosh)}, {"atanh", rw(hl.atanh)},
    {"prod", function(u) return hl.real(hl.prod(u) * w[1]) end},
    {"max and min", function(u) return hl.real(hl.max(u) * w[2]) + hl.imag(hl.min(u)) end},
    {"maximum and minimum", function(u) return hl.sum(hl.real(hl.maximum(u, w) * w) + hl.imag(hl.minimum(w, u))) end},
    {"sort", rw(hl.sort)},
    {"cumprod", rw(hl.cumprod)},
  }
  for _, c in ipairs(fs) do
    it(c[1] .. " matches central differences, eagerly and under jit", function()
      local want = diff_check.numeric_complex(c[2], z)
      diff_check.close_pairs(hl.grad(c[2])(z), want, 1e-6, c[1])
      diff_check.close_pairs(hl.jit(hl.grad(c[2]))(z), want, 1e-6, c[1] .. " (jit)")
    end)
  end
  it("the exponent's derivative at an integer exponent is z^n log z", function()
    local f = function(v) return hl.sum(hl.real(z ^ v * w)) end
    local two = hl.complex(hl.full({4}, 2, "float64"), 0)
    diff_check.close_pairs(hl.grad(f)(two), diff_check.numeric_complex(f, two), 1e-6, "d/dn z^n at n = 2")
  end)
  it("abs is differentiable at huge moduli and 0 at 0 (no NaN)", function()
    local big = hl.complex(hl.array({3e200, 0, -1e-200}, "float64"), hl.array({4e200, 0, 1e-200}, "float64"))
    local g = hl.grad(function(u) return hl.sum(hl.abs(u)) end)(big)
    local r = math.sqrt(0.5)
    diff_check.close_pairs(g, {{0.6, -0.8}, {0, 0}, {-r, -r}}, 1e-12, "grad abs")
    diff_check.close_pairs(hl.grad(function(u) return hl.sum(hl.real(hl.sign(u))) end)(big[{{2, 2}}]), {{0, 0}}, 0, "grad sign at 0")
  end)
  it("real asinh, acosh and atanh", function()
    local x = hl.array({1.3, 1.7, 2.5}, "float64")
    for _, f in ipairs {hl.asinh, hl.acosh, function(u) return hl.atanh(u / 3) end} do
      local s = function(u) return hl.sum(f(u)) end
      diff_check.close(hl.grad(s)(x), diff_check.numeric(s, x), 1e-6, "real inverse hyperbolic")
    end
  end)
end)

describe("complex: what is still not supported is an error", function()
  local z = hl.complex(hl.array({1, 2}), hl.array({3, 4}))
  it("names the op and the dtype", function()
    for op, f in pairs {round = function() return hl.round(z) end, mod = function() return hl.mod(z, z) end,
                        floor = function() return hl.floor(z) end, erf = function() return hl.erf(z) end} do
      assert.matches("^halua: " .. op .. ": complex64 is not supported yet %(.*docs/complex.md", err_of(f))
    end
  end)
  it("empty reductions have no identity", function()
    local e = hl.zeros({2, 0}, "complex64")
    assert.are.equal("halua: max: zero-size axis 2 of shape [2,0] has no identity", err_of(hl.max, e, 2))
    assert.are.equal("halua: argmin: zero-size axis 2 of shape [2,0] has no index", err_of(hl.argmin, e, -1))
  end)
end)
