-- complex64 and complex128 (docs/complex.md): construction, parts, promotion, printing, .npy,
-- elementwise arithmetic, exp/log/sqrt, sums, under jit, grad (JAX's convention) and vmap, and
-- the errors of what is not supported yet.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"
local diff_check = require "support.diff_check"

math.randomseed(22)

local DT = {"complex64", "complex128"}
local PART = {complex64 = "float32", complex128 = "float64"}

-- a random complex array of dtype dt, parts in [lo, hi]
local function crand(shape, dt, lo, hi)
  lo, hi = lo or -2, hi or 2
  return hl.complex(np.rand(shape, lo, hi, PART[dt]), np.rand(shape, lo, hi, PART[dt]))
end

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(e)
end

local shapes = {{}, {5}, {3, 4}, {2, 3, 2}}
local function sh(s) return "[" .. table.concat(s, ",") .. "]" end

suite("complex construction and parts", function(case)
  for _, dt in ipairs(DT) do
    local p = PART[dt]
    for _, s in ipairs(shapes) do
      local re, im = np.rand(s, -3, 3, p), np.rand(s, -3, 3, p)
      local z = crand(s, dt)
      case(dt .. " complex(re, im) " .. sh(s), function() return hl.complex(re, im) end, "a + 1j * b", {re, im}, {dtype = dt})
      case(dt .. " real " .. sh(s), function() return hl.real(z) end, "np.real(a)", {z})
      case(dt .. " imag " .. sh(s), function() return hl.imag(z) end, "np.imag(a)", {z})
      case(dt .. " conj " .. sh(s), function() return hl.conj(z) end, "np.conj(a)", {z})
      case(dt .. " abs " .. sh(s), function() return hl.abs(z) end, "np.abs(a)", {z})
      case(dt .. " angle " .. sh(s), function() return hl.angle(z) end, "np.angle(a)", {z})
      case(dt .. " astype from " .. p .. " " .. sh(s), function() return re:astype(dt) end, "a.astype(np." .. dt .. ")", {re})
      case(dt .. " method z:conj() " .. sh(s), function() return z:conj() end, "np.conj(a)", {z})
    end
    local z = crand({3, 4}, dt)
    case(dt .. " angle on the axes and at 0", function()
      return hl.angle(hl.complex(hl.array({1, -1, 0, 0, 0, -1}, p), hl.array({0, 0, 1, -1, 0, 0}, p)))
    end, "np.angle(np.array([1, -1, 1j, -1j, 0, -1+0j], dtype=np." .. dt .. "))", {}, {dtype = p})
    case(dt .. " real of a real array is itself", function() return hl.real(hl.real(z)) end, "np.real(a)", {z})
    case(dt .. " imag of a real array is zeros", function() return hl.imag(hl.real(z)) end, "np.zeros(a.shape, a.real.dtype)", {z})
    case(dt .. " zeros", function() return hl.zeros({2, 3}, dt) end, "np.zeros((2, 3), np." .. dt .. ")", {})
    case(dt .. " ones", function() return hl.ones({4}, dt) end, "np.ones(4, np." .. dt .. ")", {})
    case(dt .. " full", function() return hl.full({2, 2}, 2.5, dt) end, "np.full((2, 2), 2.5, np." .. dt .. ")", {})
    case(dt .. " transpose, reshape and slice keep pairs", function() return z.T:reshape({2, 6})[{{}, {2, 5}}] end,
         "a.T.reshape(2, 6)[:, 1:5]", {z})
    case(dt .. " concatenate and stack", function() return hl.stack({hl.concatenate({z, z}, 1), hl.concatenate({z, z}, 1)}, 1) end,
         "np.stack([np.concatenate([a, a], 0)] * 2, 0)", {z})
    local idx = hl.array({3, 1, 3}, "int32")
    case(dt .. " take with an index array", function() return hl.take(z, idx, 1) end, "np.take(a, [2, 0, 2], 0)", {z})
    case(dt .. " at(index array):add", function() return z:at(idx):add(z[{{1, 3}}]) end,
         "(lambda b: (np.add.at(b, [2, 0, 2], a[0:3]), b)[1])(a.copy())", {z})
    case(dt .. " at(index array):set", function() return z:at(hl.array({2}, "int32")):set(hl.complex(7, -7):astype(dt)) end,
         "(lambda b: (b.__setitem__(1, 7 - 7j), b)[1])(a.copy())", {z})
    case(dt .. " broadcast_to", function() return hl.broadcast_to(z[{1}], {3, 4}) end, "np.broadcast_to(a[0], (3, 4))", {z})
  end
  local i32 = hl.array({1, -2, 3}, "int32")
  case("complex of int32 parts is complex64", function() return hl.complex(i32, i32) end, "(a + 1j * a).astype(np.complex64)", {i32},
       {dtype = "complex64"})
  case("complex of float64 and float32 is complex128", function() return hl.complex(hl.array({1.5}, "float64"), hl.array({2})) end,
       "np.array([1.5 + 2j])", {}, {dtype = "complex128"})
  case("complex of Lua numbers is complex64", function() return hl.complex(1, -2) end, "np.complex64(1 - 2j)", {})
  case("complex(re) has zero imaginary part", function() return hl.complex(i32) end, "a.astype(np.complex64)", {i32}, {dtype = "complex64"})
  case("complex broadcasts its parts", function() return hl.complex(hl.array({{1}, {2}}), hl.array({3, 4, 5})) end,
       "np.array([[1], [2]]) + 1j * np.array([3, 4, 5])", {}, {dtype = "complex64"})
  case("astype complex64 to complex128", function() return hl.complex(hl.array({1.5}), 2):astype("complex128") end,
       "np.array([1.5 + 2j])", {}, {dtype = "complex128"})
  case("astype int32 to complex64", function() return i32:astype("complex64") end, "a.astype(np.complex64)", {i32})
  case("astype bool to complex128", function() return hl.array({true, false}):astype("complex128") end, "np.array([1, 0], np.complex128)", {})
end)

suite("complex arithmetic and promotion", function(case)
  for _, dt in ipairs(DT) do
    local p = PART[dt]
    for _, s in ipairs {{}, {7}, {3, 4}} do
      local a, b = crand(s, dt), crand(s, dt, 0.5, 2)
      local x = np.rand(s, -2, 2, p)
      for _, o in ipairs {{"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"}} do
        case(string.format("%s %s %s", dt, o[1], sh(s)), function() return hl[o[1]](a, b) end, "a " .. o[2] .. " b", {a, b})
        case(string.format("%s %s with %s %s", dt, o[1], p, sh(s)), function() return hl[o[1]](x, b) end, "a " .. o[2] .. " b", {x, b})
        case(string.format("%s %s a Lua number %s", dt, o[1], sh(s)), function() return hl[o[1]](a, 2.5) end,
             "a " .. o[2] .. " np." .. dt .. "(2.5)", {a})
      end
      case(dt .. " operators " .. sh(s), function() return (a * b - a) / b + (-a) end, "(a * b - a) / b + (-a)", {a, b})
      case(dt .. " square " .. sh(s), function() return hl.square(a) end, "np.square(a)", {a})
      case(dt .. " reciprocal " .. sh(s), function() return hl.reciprocal(b) end, "np.reciprocal(b)", {a, b})
      case(dt .. " exp " .. sh(s), function() return hl.exp(a) end, "np.exp(a)", {a})
      case(dt .. " log " .. sh(s), function() return hl.log(a) end, "np.log(a)", {a})
      case(dt .. " sqrt " .. sh(s), function() return hl.sqrt(a) end, "np.sqrt(a)", {a})
      for _, fn in ipairs {"sin", "cos", "tan", "sinh", "cosh", "tanh"} do
        case(dt .. " " .. fn .. " " .. sh(s), function() return hl[fn](a) end, "np." .. fn .. "(a)", {a}, {rtol = 1e-5, atol = 1e-6})
      end
      case(dt .. " eq " .. sh(s), function() return hl.eq(a, hl.where(hl.real(a):gt(0), a, b)) end,
           "a == np.where(a.real > 0, a, b)", {a, b})
      case(dt .. " ne " .. sh(s), function() return hl.ne(a, hl.where(hl.real(a):gt(0), a, b)) end,
           "a != np.where(a.real > 0, a, b)", {a, b})
      case(dt .. " where " .. sh(s), function() return hl.where(hl.imag(a):lt(0), a, b) end, "np.where(a.imag < 0, a, b)", {a, b})
    end
    -- the principal branches, on the cut and at the special points
    local edge = hl.complex(hl.array({-4, -1, 0, 0, 3, -2, 1e-3, 1e4, -1e4}, p), hl.array({0, 0, 0, 2, -4, -1e-3, 1e4, 1e-3, 1e-3}, p))
    case(dt .. " sqrt on the negative axis, at 0 and off the diagonal", function() return hl.sqrt(edge) end, "np.sqrt(a)", {edge})
    local big = hl.complex(hl.array({30, -30, 25, 0.5, -0.5}, p), hl.array({1, -2, 0.5, 30, -25}, p))
    case(dt .. " tanh and tan far from the axis (no inf / inf)", function() return hl.concatenate({hl.tanh(big), hl.tan(big)}) end,
         "np.concatenate([np.tanh(a), np.tan(a)])", {big}, {rtol = 1e-5, atol = 1e-6})
    local nf = hl.complex(hl.array({0 / 0, 1, math.huge, 2, -math.huge, 0}, p), hl.array({0, 0 / 0, 1, -math.huge, 0 / 0, 1}, p))
    case(dt .. " isnan", function() return hl.isnan(nf) end, "np.isnan(a)", {nf})
    case(dt .. " isinf", function() return hl.isinf(nf) end, "np.isinf(a)", {nf})
    case(dt .. " isfinite", function() return hl.isfinite(nf) end, "np.isfinite(a)", {nf})
    case(dt .. " log on the negative axis", function() return hl.log(hl.complex(hl.array({-4, -1, 2}, p), 0)) end,
         "np.log(np.array([-4, -1, 2], np." .. dt .. "))", {})
    case(dt .. " exp of pure imaginary", function() return hl.exp(hl.complex(0, hl.array({0, math.pi / 2, math.pi}, p))) end,
         "np.exp(1j * np.array([0, np.pi / 2, np.pi]))", {}, {dtype = dt, atol = 1e-6})
  end
  local c64, c128 = crand({4}, "complex64"), crand({4}, "complex128")
  local f32, f64, i32 = np.rand({4}, -2, 2), np.rand({4}, -2, 2, "float64"), hl.array({1, 2, -3, 4}, "int32")
  case("complex64 + float32 is complex64", function() return c64 + f32 end, "a + b", {c64, f32}, {dtype = "complex64"})
  case("complex64 + float64 is complex128", function() return c64 + f64 end, "a + b", {c64, f64}, {dtype = "complex128"})
  case("float64 * complex64 is complex128", function() return f64 * c64 end, "a * b", {f64, c64}, {dtype = "complex128"})
  case("complex64 + int32 is complex64", function() return c64 + i32 end, "a + b", {c64, i32}, {dtype = "complex64", rtol = 1e-6})
  case("complex64 + complex128 is complex128", function() return c64 + c128 end, "a + b", {c64, c128}, {dtype = "complex128"})
  case("complex64 * a Lua number stays complex64", function() return c64 * 3 end, "a * np.float32(3)", {c64}, {dtype = "complex64"})
  case("a Lua number - complex128", function() return 1 - c128 end, "1 - a", {c128})
end)

suite("complex matmul", function(case)
  local shapes = {{{2, 3}, {3, 4}}, {{5}, {5}}, {{5}, {5, 3}}, {{3, 5}, {5}}, {{2, 3, 4}, {2, 4, 5}}, {{1, 3, 4}, {2, 4, 5}},
                  {{0, 3}, {3, 2}}, {{17, 33}, {33, 9}}}
  for _, dt in ipairs(DT) do
    for _, sp in ipairs(shapes) do
      local a, b = crand(sp[1], dt), crand(sp[2], dt)
      case(string.format("%s [%s] @ [%s]", dt, table.concat(sp[1], ","), table.concat(sp[2], ",")), function() return hl.matmul(a, b) end,
           "np.matmul(a, b)", {a, b}, {rtol = 1e-5, atol = 1e-5})
    end
    local a, x = crand({3, 4}, dt), np.rand({4, 2}, -1, 1, PART[dt])
    case(dt .. " @ a real matrix promotes", function() return hl.matmul(a, x) end, "a @ b", {a, x}, {dtype = dt, rtol = 1e-5, atol = 1e-6})
    case(dt .. " a.T @ conj(a) under jit", function() return hl.jit(function(u) return hl.matmul(u.T, hl.conj(u)) end)(a) end,
         "a.T @ np.conj(a)", {a}, {rtol = 1e-5, atol = 1e-5})
    case(dt .. " einsum ij,kj->ik", function() return hl.einsum("ij,kj->ik", a, a) end, "np.einsum('ij,kj->ik', a, a)", {a},
         {rtol = 1e-5, atol = 1e-5})
    case(dt .. " dot of vectors does not conjugate", function() return hl.dot(a[1], a[2]) end, "np.dot(a[0], a[1])", {a},
         {rtol = 1e-5, atol = 1e-6})
  end
end)

suite("complex reductions", function(case)
  for _, dt in ipairs(DT) do
    local z = crand({3, 4, 5}, dt)
    case(dt .. " sum", function() return hl.sum(z) end, "np.sum(a)", {z}, {rtol = 1e-5})
    case(dt .. " sum axis 2", function() return hl.sum(z, 2) end, "np.sum(a, 1)", {z}, {rtol = 1e-5})
    case(dt .. " sum axes {1, -1} keepdims", function() return hl.sum(z, {1, -1}, true) end, "np.sum(a, (0, 2), keepdims=True)", {z},
         {rtol = 1e-5})
    case(dt .. " mean", function() return hl.mean(z) end, "np.mean(a)", {z}, {rtol = 1e-5})
    case(dt .. " mean axis -1", function() return hl.mean(z, -1) end, "np.mean(a, -1)", {z}, {rtol = 1e-5})
    case(dt .. " var axis 1 (a real result)", function() return hl.var(z, 1) end, "np.var(a, 0)", {z}, {rtol = 1e-5, atol = 1e-6})
    case(dt .. " std", function() return hl.std(z) end, "np.std(a)", {z}, {rtol = 1e-5})
    case(dt .. " sum of an empty axis", function() return hl.sum(hl.zeros({0, 3}, dt), 1) end, "np.zeros(3, np." .. dt .. ")", {})
  end
end)

suite("complex under jit", function(case)
  for _, dt in ipairs(DT) do
    local a, b = crand({3, 4}, dt), crand({3, 4}, dt, 0.5, 2)
    local x = np.rand({4}, -1, 1, PART[dt])
    local f = hl.jit(function(u, v, w) return hl.sqrt(u * v + w) / v - hl.exp(hl.conj(u)) end)
    case(dt .. " one pipeline of mul, add, sqrt, div, exp, conj", function() return f(a, b, x) end,
         "np.sqrt(a * b + c) / b - np.exp(np.conj(a))", {a, b, x})
    local g = hl.jit(function(u) return hl.abs(u) + hl.angle(u) + hl.real(u) * hl.imag(u) end)
    case(dt .. " abs, angle, real and imag in a pipeline", function() return g(a) end,
         "np.abs(a) + np.angle(a) + a.real * a.imag", {a})
    local h = hl.jit(function(u) return hl.mean(hl.log(u), 1), hl.sum(u.T[{{2, 3}}]) end)
    case(dt .. " log, mean, transpose and slices in a pipeline", function() return (h(a)) end, "np.mean(np.log(a), 0)", {a})
    case(dt .. " a second result", function() return select(2, h(a)) end, "np.sum(a.T[1:3])", {a}, {rtol = 1e-5})
    local k = hl.jit(function(re, im) return hl.complex(re, im) * 2 end)
    case(dt .. " complex() in a pipeline", function() return k(x, x + 1) end, "(a + 1j * (a + 1)) * 2", {x}, {dtype = dt})
    case(dt .. " a complex constant in a pipeline", function()
      return hl.jit(function(u) return u + hl.ones({4}, dt) end)(a)
    end, "a + 1", {a})
    case(dt .. " astype to complex in a pipeline", function() return hl.jit(function(u) return u:astype(dt) end)(x) end,
         "a.astype(np." .. dt .. ")", {x})
  end
end)

-- JAX's convention for f real-valued of complex z = x + iy: grad f = df/dx - i df/dy
-- (jax.grad(jnp.abs)(3+4j) is 0.6-0.8j). The partials by central differences in complex128.
local numeric_grad, assert_pairs_close = diff_check.numeric_complex, diff_check.close_pairs

describe("complex gradients (JAX's convention)", function()
  local w = hl.complex(hl.array({0.5, -1.5, 2, 0.25}, "float64"), hl.array({1, 0.5, -0.75, 2}, "float64"))
  local z = hl.complex(hl.array({1.2, -0.7, 0.3, 2.1}, "float64"), hl.array({-0.4, 1.1, 0.9, -1.6}, "float64"))
  local fs = {
    {"real(z * w)", function(u) return hl.sum(hl.real(u * w)) end},
    {"abs(z)", function(u) return hl.sum(hl.abs(u)) end},
    {"imag(exp(z))", function(u) return hl.sum(hl.imag(hl.exp(u))) end},
    {"real(z / w) + imag(w / z)", function(u) return hl.sum(hl.real(u / w) + hl.imag(w / u)) end},
    {"abs(conj(z) + z * z)", function(u) return hl.sum(hl.abs(hl.conj(u) + u * u)) end},
    {"real(log(z)) + imag(sqrt(z))", function(u) return hl.sum(hl.real(hl.log(u)) + hl.imag(hl.sqrt(u))) end},
    {"real(sum(z) * mean(z)) - angle(z)", function(u) return hl.real(hl.sum(u) * hl.mean(u)) - hl.sum(hl.angle(u)) end},
    {"abs(z - 1)^2 + real(2 / z)", function(u) return hl.sum(hl.square(hl.abs(u - 1)) + hl.real(2 / u)) end},
    {"real(sin(z) cos(z)) + imag(tanh(z)) + abs(tan(z))", function(u)
      return hl.sum(hl.real(hl.sin(u) * hl.cos(u)) + hl.imag(hl.tanh(u)) + hl.abs(hl.tan(u)))
    end},
    {"abs(sinh(z) - cosh(z))", function(u) return hl.sum(hl.abs(hl.sinh(u) - hl.cosh(u))) end},
    {"abs(M @ z) with M complex", function(u)
      local M = hl.reshape(hl.complex(hl.array({1, -2, 0.5, 3, 1, 0, -1, 2}, "float64"), 0.5), {2, 4})
      return hl.sum(hl.abs(hl.matmul(M, u)))
    end},
    {"real(dot(z, z w))", function(u) return hl.real(hl.dot(u, u * w)) end},
  }
  for _, c in ipairs(fs) do
    it("grad of sum " .. c[1] .. " matches central differences, eagerly and under jit", function()
      local want = numeric_grad(c[2], z)
      assert_pairs_close(hl.grad(c[2])(z), want, 1e-6, c[1])
      assert_pairs_close(hl.jit(hl.grad(c[2]))(z), want, 1e-6, c[1] .. " (jit)")
    end)
  end
  it("complex64 gradients too", function()
    local z64 = z:astype("complex64")
    local g = hl.grad(function(u) return hl.sum(hl.abs(u * u + 1)) end)(z64)
    assert.are.equal("complex64", g.dtype)
    assert_pairs_close(g, numeric_grad(function(u) return hl.sum(hl.abs(u * u + 1)) end, z), 1e-4, "complex64")
  end)
  it("gives JAX's values for real, imag and abs", function()
    local one = hl.complex(3, 4):astype("complex128")
    assert_pairs_close(hl.grad(hl.real)(one), {{1, 0}}, 0, "real")
    assert_pairs_close(hl.grad(hl.imag)(one), {{0, -1}}, 0, "imag")
    assert_pairs_close(hl.grad(hl.abs)(one), {{0.6, -0.8}}, 1e-15, "abs")
  end)
  it("differentiates real inputs through complex values", function()
    local x, y = hl.array({0.5, -1, 2}, "float64"), hl.array({1.5, 0.25, -1}, "float64")
    local gs = hl.grad(function(a, b) return hl.sum(hl.square(hl.abs(hl.complex(a, b)))) end, {1, 2})(x, y)
    local gx, gy = gs[1], gs[2]
    diff_check.close(gx, {1, -2, 4}, 1e-12, "d/dx")
    diff_check.close(gy, {3, 0.5, -2}, 1e-12, "d/dy")
    -- a real array made complex: its cotangent is the real part (JAX's convert_element_type)
    local gc = hl.grad(function(a) return hl.sum(hl.real(a:astype("complex128") * w[{{1, 3}}])) end)(x)
    assert.are.equal("float64", gc.dtype)
    diff_check.close(gc, {0.5, -1.5, 2}, 1e-15, "d/dx of real(x w)")
  end)
  it("forward mode: jvp of a holomorphic function is f'(z) t", function()
    local t = hl.complex(hl.array({1, 0, -1, 0.5}, "float64"), hl.array({0, 1, 2, -0.5}, "float64"))
    local y, dy = hl.jvp(function(u) return hl.exp(u) * u end, {z}, {t})
    local want = (hl.exp(z) * (z + 1) * t)
    assert_pairs_close(dy, hl.reshape(want, {4}):totable(), 1e-12, "jvp")
    assert_pairs_close(y, hl.reshape(hl.exp(z) * z, {4}):totable(), 1e-12, "jvp primal")
  end)
  it("asks for a real output", function()
    assert.matches("grad: the function must return a real scalar but returned complex128%[%]; differentiate hl.real%(f%(x%)%) or hl.abs",
                   err_of(hl.grad(function(u) return hl.sum(u) end), z))
  end)
end)

describe("complex under vmap", function()
  it("maps over a leading axis as a loop would", function()
    for _, dt in ipairs(DT) do
      local z, w = crand({4, 3}, dt), crand({3}, dt, 0.5, 1)
      local f = function(u) return hl.real(hl.sqrt(u) * w), hl.conj(u) / w, hl.sum(hl.exp(u)) end
      local a, b, c = hl.vmap(f)(z)
      for i = 1, 4 do
        local ea, eb, ec = f(z[{i}])
        assert_pairs_close(hl.complex(a[{i}]), hl.reshape(hl.complex(ea), {3}):totable(), 1e-6, dt .. " vmap real(sqrt)")
        assert_pairs_close(b[{i}], hl.reshape(eb, {3}):totable(), 1e-6, dt .. " vmap conj / w")
        assert_pairs_close(hl.reshape(c[{i}], {1}), {ec:item()}, 1e-6, dt .. " vmap sum(exp)")
      end
      assert.are.equal(dt, b.dtype)
      local _, jb = hl.jit(hl.vmap(f))(z)
      assert_pairs_close(jb, hl.reshape(b, {12}):totable(), 1e-6, dt .. " jit of vmap")
    end
  end)
  it("maps matmul", function()
    local z = crand({3, 2, 2}, "complex128")
    local v = hl.vmap(function(u) return hl.matmul(u, hl.conj(u)) end)(z)
    for i = 1, 3 do assert_pairs_close(v[{i}], hl.reshape(hl.matmul(z[{i}], hl.conj(z[{i}])), {4}):totable(), 1e-12, "vmap matmul") end
  end)
  it("maps a gradient", function()
    local z = crand({3, 2}, "complex128")
    local f = function(u) return hl.sum(hl.abs(u * u)) end
    local g = hl.vmap(hl.grad(f))(z)
    for i = 1, 3 do assert_pairs_close(g[{i}], hl.reshape(hl.grad(f)(z[{i}]), {2}):totable(), 1e-12, "vmap of grad") end
  end)
  it("maps with in_axes 2", function()
    local z = crand({2, 5}, "complex64")
    local r = hl.vmap(function(u) return u * u end, 2)(z)
    assert.are.same({5, 2}, r.shape)
    assert_pairs_close(r, hl.reshape((z * z).T, {10}):totable(), 1e-6, "in_axes 2")
  end)
end)

describe("complex values in Lua", function()
  it("item and totable give {re, im} pairs", function()
    local z = hl.complex(hl.array({{1, -2}, {0.5, 3}}), hl.array({{0, 4}, {-1.5, 0.25}}))
    assert.are.same({{{1, 0}, {-2, 4}}, {{0.5, -1.5}, {3, 0.25}}}, z:totable())
    assert.are.same({-2, 4}, z[{1, 2}]:item())
    assert.are.same({0.1, -0.2}, hl.complex(hl.array(0.1, "float64"), hl.array(-0.2, "float64")):item())
    -- a strided view reads the right pairs
    assert.are.same({{-2, 4}, {3, 0.25}}, z.T[{2}]:totable())
  end)
  it("prints as hl.complex(re, im), which rebuilds the array", function()
    for _, dt in ipairs(DT) do
      for _, z in ipairs {crand({2, 3}, dt), crand({}, dt), hl.zeros({0, 2}, dt), crand({4}, dt)} do
        local text = tostring(z)
        local back = assert(loadstring("local hl = ...; return " .. text))(hl)
        assert.are.equal(dt, back.dtype, text)
        assert.are.same(z.shape, back.shape)
        if dt == "complex64" then assert.are.same(z:totable(), back:totable()) end
      end
    end
    assert.are.equal('hl.complex(hl.array({1.0, 2.0}), hl.array({ 3.0, -0.5}))', tostring(hl.complex(hl.array({1, 2}), hl.array({3, -0.5}))))
    assert.are.equal('hl.complex(hl.array(1.5, "float64"), hl.array(0.0, "float64"))', tostring(hl.complex(hl.array(1.5, "float64"))))
    assert.are.equal('hl.zeros({0, 2}, "complex128")', tostring(hl.zeros({0, 2}, "complex128")))
  end)
  it("dtype names are hl fields like the others", function()
    assert.are.equal("complex64", hl.complex64)
    assert.are.equal("complex128", hl.complex128)
    assert.are.equal("complex128", hl.zeros({2}, hl.complex128).dtype)
  end)
end)

describe("complex .npy files", function()
  local function tmp() return os.tmpname() .. ".npy" end
  local function python(code)
    local ok = os.execute((os.getenv("HALUA_NUMPY_PYTHON") or "/usr/bin/python3") .. " -c " .. string.format("%q", "import numpy as np; " .. code))
    assert(ok == 0 or ok == true, "python failed")
  end
  it("hl.save writes '<c8' and '<c16' files NumPy reads", function()
    for _, dt in ipairs(DT) do
      local z = crand({3, 2}, dt)
      local p, q = tmp(), tmp()
      hl.save(p, z.T)   -- a strided view is written in order
      python(string.format("a = np.load(%q); assert a.dtype == np.%s, a.dtype; np.save(%q, a * (1 + 1j))", p, dt, q))
      local back = hl.load(q)
      assert.are.equal(dt, back.dtype)
      assert_pairs_close(back, hl.reshape(z.T * hl.complex(1, 1):astype(dt), {6}):totable(), 1e-6, dt .. " round trip")
      os.remove(p)
      os.remove(q)
    end
  end)
  it("hl.load reads NumPy's complex files, big-endian ones too", function()
    local p, q = tmp(), tmp()
    python(string.format("np.save(%q, np.array([[1+2j, -3.5-4j]], '<c8')); np.save(%q, np.array([0.5-1j, 2j], '>c16'))", p, q))
    local a, b = hl.load(p), hl.load(q)
    assert.are.equal("complex64", a.dtype)
    assert.are.same({{{1, 2}, {-3.5, -4}}}, a:totable())
    assert.are.equal("complex128", b.dtype)
    assert.are.same({{0.5, -1}, {0, 2}}, b:totable())
    os.remove(p)
    os.remove(q)
  end)
end)

describe("complex: what is not supported yet is an error", function()
  local z = hl.complex(hl.array({1, 2}), hl.array({3, 4}))
  local m = hl.reshape(hl.complex(hl.array({1, 2, 3, 4}), 1), {2, 2})
  local function unsupported(op, f)
    local e = err_of(f)
    assert.matches("^halua: " .. op:gsub("%.", "%%.") .. ": complex64 is not supported yet %(", e)
    assert.matches("docs/complex.md", e)
  end
  it("names the op and the dtype", function()
    unsupported("round", function() return hl.round(z) end)
    -- (the primitive's mul mode; x:at(idx):mul composes it for complex arrays)
    unsupported("scatter", function() return hl.core.scatter(z, hl.complex(hl.array({2}), 1), hl.array({0}, "int32"), 0, "mul") end)
    unsupported("linalg.cholesky", function() return hl.linalg.cholesky(m) end)
    unsupported("erf", function() return hl.erf(z) end)
    unsupported("rsqrt", function() return hl.rsqrt(z) end)
    unsupported("mod", function() return z % 2 end)
    unsupported("floor_divide", function() return hl.floor_divide(z, z) end)
    unsupported("linalg.solve", function() return hl.linalg.solve(m, m) end)
    unsupported("floor", function() return hl.floor(z) end)
    unsupported("ceil", function() return hl.jit(function(u) return hl.ceil(u) end)(z) end)
  end)
  it("casting to a real dtype asks for real or abs", function()
    assert.are.equal("halua: astype: complex64 to float32 would drop the imaginary part; take hl.real(x) or hl.abs(x) first",
                     err_of(function() return z:astype("float32") end))
  end)
  it("complex() of complex parts", function()
    assert.are.equal("halua: complex: argument 2 is already complex64; its parts are hl.real(x) and hl.imag(x)",
                     err_of(hl.complex, 1, z))
  end)
  it("view_as_complex needs pairs", function()
    assert.matches("view_as_complex: the last axis holds the %(re, im%) pairs and must have extent 2, got shape %[3%]",
                   err_of(hl.core.view_as_complex, hl.array({1, 2, 3})))
  end)
end)

describe("complex on a GPU", function()
  local z = hl.complex(hl.array({1, 2}), hl.array({3, 4}))
  it("complex arrays move to a GPU and back, and compute there as on the host", function()
    if #hl.devices() == 1 then return end   -- (no GPU here: device_put says so first)
    local host = z:to("cpu")
    local g = host:to("cuda")
    assert.are.equal("complex64", g.dtype)
    assert.matches("^cuda", g.device)
    assert.are.same(host:totable(), g:to("cpu"):totable())
    local w = g * g + hl.conj(g)
    assert.matches("^cuda", w.device)
    assert.are.same((host * host + hl.conj(host)):totable(), w:to("cpu"):totable())   -- small integers: exact
  end)
end)
