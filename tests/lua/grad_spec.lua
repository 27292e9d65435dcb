-- Gradients against central finite differences (float64) for every differentiable op, second
-- derivatives, Jacobians (jacfwd, jacrev, jvp, vjp), a small MLP against hand-written backprop,
-- the conventions at ties / where / stop_gradient, custom_vjp, and the transformations' errors.
-- Every gradient checked here is also checked under hl.jit: hl.jit(hl.grad(f)) == hl.grad(f).
-- (Rule coverage, tapes and jit nesting are in ad_spec.lua.)
local hl = require "halua"
local unpack = unpack or table.unpack

local F64 = "float64"

---------------------------------------------------------------- helpers

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

local function shape_str(s) return "[" .. table.concat(s, ",") .. "]" end

local function from_flat(vals, shape, dtype)
  if #shape == 0 then return hl.array(vals[1], dtype or F64) end
  return hl.reshape(hl.array(vals, dtype or F64), shape)
end

-- the elements of an array (or a number), flat, as Lua values
local function flat(x)
  if type(x) == "number" then return {x} end
  if x.ndim == 0 then return {x:item()} end
  return hl.reshape(x, {x.size}):totable()
end

-- A deterministic random stream (Park-Miller, exact in doubles), so every case gets the same
-- data however the file is filtered. random() is uniform in [0, 1), random(a, b) an integer.
local function stream(seed)
  local state = seed % 2147483646 + 1
  return function(a, b)
    state = state * 16807 % 2147483647
    local u = (state - 1) / 2147483646
    if a then return a + math.floor(u * (b - a + 1)) end
    return u
  end
end
local random = stream(20240611)

-- a float64 array of the given shape, elements uniform in [lo, hi) and accepted by ok (if given)
local function rand(shape, lo, hi, ok, gen)
  gen = gen or random
  local v = {}
  for i = 1, numel(shape) do
    local r
    repeat r = lo + (hi - lo) * gen() until not ok or ok(r)
    v[i] = r
  end
  return from_flat(v, shape)
end

-- actual (an array) against expected (an array, a number or a nested table), elementwise
-- |a - e| <= rtol * |e| + atol; shapes must agree when expected is an array
local function close(actual, expected, rtol, atol, what)
  what = what or "value"
  assert(hl.core.is_array(actual), what .. ": expected an array, got " .. tostring(actual))
  if type(expected) == "table" and not hl.core.is_array(expected) then expected = hl.array(expected, F64) end
  if hl.core.is_array(expected) then
    assert(shape_str(actual.shape) == shape_str(expected.shape),
           what .. ": shape " .. shape_str(actual.shape) .. ", expected " .. shape_str(expected.shape))
  end
  local a, e = flat(actual), flat(expected)
  if type(expected) == "number" then
    for i = 2, #a do e[i] = expected end
  end
  assert(#a == #e, what .. ": " .. #a .. " elements, expected " .. #e)
  rtol, atol = rtol or 1e-12, atol or 0
  for i = 1, #a do
    local x, y = a[i], e[i]
    assert(x == x and math.abs(x - y) <= rtol * math.abs(y) + atol,
           string.format("%s: element %d is %.17g, expected %.17g (rtol %g, atol %g)", what, i, x, y, rtol, atol))
  end
end

local function close_tree(actual, expected, rtol, atol, what)
  local al, ad = hl.tree.flatten(actual)
  local el, ed = hl.tree.flatten(expected)
  assert.are.equal(ed, ad, (what or "tree") .. ": tree structure")
  for i = 1, #el do close(al[i], el[i], rtol, atol, (what or "tree") .. " leaf " .. i) end
end

local function all_zero(x, what)
  for i, v in ipairs(flat(x)) do
    assert(v == 0, string.format("%s: element %d is %.17g, expected exactly 0", what or "gradient", i, v))
  end
end

local function max_abs(x)
  local m = 0
  for _, v in ipairs(flat(x)) do m = math.max(m, math.abs(v)) end
  return m
end

-- Central differences of the scalar function loss (returns a 0-d array) with respect to args[i].
local function fd_grad(loss, args, i)
  local x = args[i]
  local v = flat(x)
  local call = {}
  for k = 1, #args do call[k] = args[k] end
  local g = {}
  for k = 1, #v do
    local keep = v[k]
    local h = 1e-6 * math.max(1, math.abs(keep))
    v[k] = keep + h
    call[i] = from_flat(v, x.shape)
    local up = loss(unpack(call, 1, #args)):item()
    v[k] = keep - h
    call[i] = from_flat(v, x.shape)
    local dn = loss(unpack(call, 1, #args)):item()
    v[k] = keep
    g[k] = (up - dn) / (2 * h)
  end
  return from_flat(g, x.shape)
end

-- Central-difference Jacobian of f (array -> array) at x: shape out.shape .. x.shape.
local function fd_jac(f, x)
  local out = f(x)
  local v = flat(x)
  local nin, nout = #v, out.size
  local J = {}
  for k = 1, nin do
    local keep = v[k]
    local h = 1e-6 * math.max(1, math.abs(keep))
    v[k] = keep + h
    local up = flat(f(from_flat(v, x.shape)))
    v[k] = keep - h
    local dn = flat(f(from_flat(v, x.shape)))
    v[k] = keep
    for o = 1, nout do J[(o - 1) * nin + k] = (up[o] - dn[o]) / (2 * h) end
  end
  local shape = out.shape
  for _, s in ipairs(x.shape) do shape[#shape + 1] = s end
  return from_flat(J, shape)
end

local FD_RTOL = 1e-6
local JIT_RTOL, JIT_ATOL = 1e-10, 1e-12

-- loss = (f(args) * w):sum(), w a fixed random array (from `seed`), so every output element matters
local function weighted_loss(f, args, seed)
  local out = f(unpack(args))
  assert.are.equal(F64, out.dtype)
  local w = rand(out.shape, -1, 1, nil, stream(seed))
  local argnums = {}
  for i = 1, #args do argnums[i] = i end
  return function(...) return (f(...) * w):sum() end, argnums
end

-- The gradient of the weighted loss with respect to every argument against central differences;
-- also with argnums as a number, and value_and_grad's value and gradient.
-- opts.zero: the gradient must be exactly 0.
local function check_grad(f, args, opts, seed)
  opts = opts or {}
  local loss, argnums = weighted_loss(f, args, seed or 1)
  local grads = hl.grad(loss, argnums)(unpack(args))
  assert.are.equal(#args, #grads)
  for i = 1, #args do
    local g = grads[i]
    assert.are.equal(F64, g.dtype)
    assert.are.equal(shape_str(args[i].shape), shape_str(g.shape))
    local fd = fd_grad(loss, args, i)
    if opts.zero then
      all_zero(g, "gradient " .. i)
    else
      assert(max_abs(fd) > 1e-3, "test defect: the finite-difference gradient " .. i .. " is ~0")
    end
    close(g, fd, FD_RTOL, FD_RTOL * math.max(1, max_abs(fd)), "gradient " .. i .. " vs finite differences")
  end
  -- one argument at a time, argnums as a number
  close(hl.grad(loss, #args)(unpack(args)), grads[#args], 1e-14, 0, "grad with argnums " .. #args)
  local v, vg = hl.value_and_grad(loss)(unpack(args))
  close(v, loss(unpack(args)), 1e-14, 0, "value_and_grad value")
  close(vg, grads[1], 1e-14, 0, "value_and_grad gradient")
end

-- hl.jit(hl.grad(loss)) against hl.grad(loss) for the same weighted loss
local function check_jit_grad(f, args, seed)
  local loss, argnums = weighted_loss(f, args, seed or 1)
  local grads = hl.grad(loss, argnums)(unpack(args))
  local jgrads = hl.jit(hl.grad(loss, argnums))(unpack(args))
  assert.are.equal(#args, #jgrads)
  for i = 1, #args do
    assert.are.equal(F64, jgrads[i].dtype)
    close(jgrads[i], grads[i], JIT_RTOL, JIT_ATOL * math.max(1, max_abs(grads[i])), "jit gradient " .. i)
  end
  local jv = hl.jit(hl.value_and_grad(loss))(unpack(args))
  close(jv, loss(unpack(args)), JIT_RTOL, JIT_ATOL * math.max(1, max_abs(jv)), "jit value_and_grad value")
end

-- cases: list of {name, f, args}: one test against finite differences, one under jit
local case_seed = 1000
local function grad_cases(cases, opts)
  for _, c in ipairs(cases) do
    local name, f, args = c[1], c[2], c[3]
    case_seed = case_seed + 1
    local seed = case_seed
    it(name, function()
      check_grad(f, args, {zero = c.zero or (opts and opts.zero)}, seed)
    end)
    it(name .. " [jit]", function()
      check_jit_grad(f, args, seed)
    end)
  end
end

local err_of = require("support.errors").err_of
-- the message starts with `prefix` and contains each of parts (plain find)
local function expect_error(prefix, parts, f, ...)
  local args, n = {...}, select("#", ...)
  assert.has_error(function() f(unpack(args, 1, n)) end)
  local m = err_of(function() return f(unpack(args, 1, n)) end)
  assert(m:sub(1, #prefix) == prefix, "message '" .. m .. "' does not start with '" .. prefix .. "'")
  for _, p in ipairs(parts) do
    assert(string.find(m, p, 1, true), "message '" .. m .. "' lacks '" .. p .. "'")
  end
end

-- values kept away from a set of points: |v - p| > gap for every p = k * period + offset
local function away_from(period, offset, gap)
  return function(v)
    local r = (v - offset) / period
    return math.abs(r - math.floor(r + 0.5)) * period > gap
  end
end
local function nonzero(gap) return function(v) return math.abs(v) > gap end end

---------------------------------------------------------------- 1. every op against finite differences

describe("grad vs finite differences: unary", function()
  local S = {3, 4}
  local domains = {
    neg = {-3, 3}, square = {-3, 3}, exp = {-2, 2}, expm1 = {-2, 2},
    abs = {-2, 2, nonzero(0.1)}, reciprocal = {-2, 2, nonzero(0.4)},
    log = {0.2, 3}, log1p = {-0.6, 3}, sqrt = {0.2, 3}, rsqrt = {0.2, 3},
    sin = {-3, 3}, cos = {-3, 3}, tan = {-1.2, 1.2}, asin = {-0.9, 0.9}, acos = {-0.9, 0.9},
    atan = {-3, 3}, sinh = {-2, 2}, cosh = {-2, 2, nonzero(0.1)}, tanh = {-2, 2}, erf = {-2, 2},
  }
  local names = {}
  for name in pairs(domains) do names[#names + 1] = name end
  table.sort(names)
  local cases = {}
  for _, name in ipairs(names) do
    local d = domains[name]
    local op = hl[name]
    cases[#cases + 1] = {name, function(x) return op(x) end, {rand(S, d[1], d[2], d[3])}}
  end
  cases[#cases + 1] = {"unary minus operator", function(x) return -x end, {rand(S, -3, 3)}}
  cases[#cases + 1] = {"method form x:exp()", function(x) return x:exp() end, {rand(S, -2, 2)}}
  cases[#cases + 1] = {"composite sin(x) * exp(-x^2) / (1 + x^2)", function(x)
    return hl.sin(x) * hl.exp(-(x * x)) / (x * x + 1)
  end, {rand(S, -2, 2)}}
  cases[#cases + 1] = {"0-d input", function(x) return hl.tanh(x) * hl.exp(x) end, {rand({}, -1, 1)}}
  grad_cases(cases)

  -- piecewise constant: exactly zero gradient (inputs away from the jumps, so differences are 0 too)
  grad_cases({
    {"sign", function(x) return hl.sign(x) end, {rand(S, -3, 3, nonzero(0.1))}},
    {"floor", function(x) return hl.floor(x) end, {rand(S, -3, 3, away_from(1, 0, 0.1))}},
    {"ceil", function(x) return hl.ceil(x) end, {rand(S, -3, 3, away_from(1, 0, 0.1))}},
    {"round", function(x) return hl.round(x) end, {rand(S, -3, 3, away_from(1, 0.5, 0.1))}},
  }, {zero = true})
  it("x * floor(x) has gradient floor(x)", function()
    local x = rand(S, -3, 3, away_from(1, 0, 0.1))
    local g = hl.grad(function(v) return (v * hl.floor(v)):sum() end)(x)
    close(g, hl.floor(x), 0, 0)
    close(hl.jit(hl.grad(function(v) return (v * hl.floor(v)):sum() end))(x), hl.floor(x), 0, 0)
  end)
end)

describe("grad vs finite differences: binary and broadcasting", function()
  local S = {3, 4}
  local function pos(shape) return rand(shape, 0.5, 2) end
  local function any(shape) return rand(shape, -2, 2) end
  local function denom(shape) return rand(shape, -2, 2, nonzero(0.4)) end
  -- pairs a, b with a / b away from integers (mod and floor_divide are smooth there)
  local function mod_pair(sa, sb)
    local b = denom(sb)
    local out = hl.broadcast_to(b, hl.add(hl.zeros(sa, F64), hl.zeros(sb, F64)).shape)
    local bv = flat(out)
    local av = {}
    for i = 1, #bv do
      local q = random(-3, 3) + 0.2 + 0.6 * random()
      av[i] = bv[i] * q
    end
    local a = from_flat(av, out.shape)
    -- a has the broadcast shape; reduce it to sa only when sa is that shape
    assert(shape_str(a.shape) == shape_str(sa), "test defect: mod_pair needs a to have the broadcast shape")
    return a, b
  end
  local function maxmin_pair(sa, sb)
    local a, b
    repeat
      a, b = any(sa), any(sb)
    until hl.min(hl.abs(a - b)):item() > 0.1
    return a, b
  end

  local binary = {
    {"add", hl.add, any, any}, {"sub", hl.sub, any, any}, {"mul", hl.mul, any, any},
    {"div", hl.div, any, denom}, {"pow", hl.pow, pos, any}, {"atan2", hl.atan2, any, denom},
    {"maximum", hl.maximum, nil, nil, maxmin_pair}, {"minimum", hl.minimum, nil, nil, maxmin_pair},
    {"mod", hl.mod, nil, nil, mod_pair},
  }
  local cases = {}
  for _, b in ipairs(binary) do
    local name, op, ga, gb, pair = b[1], b[2], b[3], b[4], b[5]
    local function args(sa, sb)
      if pair then return {pair(sa, sb)} end
      return {ga(sa), gb(sb)}
    end
    cases[#cases + 1] = {name .. " [3,4] with [3,4]", function(x, y) return op(x, y) end, args(S, S)}
    cases[#cases + 1] = {name .. " [3,4] with [4] (broadcast)", function(x, y) return op(x, y) end, args(S, {4})}
    cases[#cases + 1] = {name .. " [3,4] with [3,1] (broadcast)", function(x, y) return op(x, y) end, args(S, {3, 1})}
    if not pair then
      cases[#cases + 1] = {name .. " [3,1] with [4] (both broadcast)", function(x, y) return op(x, y) end, args({3, 1}, {4})}
      cases[#cases + 1] = {name .. " [] with [3,4] (0-d)", function(x, y) return op(x, y) end, args({}, S)}
    end
  end
  -- operators, also with Lua numbers on either side
  local a, b = any(S), denom({3, 1})
  local p = pos(S)
  local ma, mb = mod_pair(S, {4})
  for _, c in ipairs {
    {"operator +", function(x, y) return x + y end, {a, b}},
    {"operator -", function(x, y) return x - y end, {a, b}},
    {"operator *", function(x, y) return x * y end, {a, b}},
    {"operator /", function(x, y) return x / y end, {a, b}},
    {"operator %", function(x, y) return x % y end, {ma, mb}},
    {"operator ^", function(x, y) return x ^ y end, {p, any({4})}},
    {"x + 2.5 and 2.5 - x", function(x) return (x + 2.5) * (2.5 - x) end, {a}},
    {"3 * x / 2", function(x) return 3 * x / 2 end, {a}},
    {"2 / x", function(x) return 2 / x end, {denom(S)}},
    {"x ^ 3", function(x) return x ^ 3 end, {any(S)}},
    {"x ^ 0.5", function(x) return x ^ 0.5 end, {pos(S)}},
    {"x ^ -1.5", function(x) return x ^ -1.5 end, {pos(S)}},
    {"2 ^ x", function(x) return 2 ^ x end, {any(S)}},
    {"x % 1.5", function(x) return x % 1.5 end, {rand(S, -4, 4, away_from(1.5, 0, 0.1))}},
    {"x appears twice: x * x + x / (x ^ 2 + 1)", function(x) return x * x + x / (x ^ 2 + 1) end, {any(S)}},
  } do
    cases[#cases + 1] = c
  end
  grad_cases(cases)

  local fa, fb = mod_pair(S, S)
  grad_cases({
    {"floor_divide (zero gradient)", function(x, y) return hl.floor_divide(x, y) end, {fa, fb}},
  }, {zero = true})

  it("cast float64 -> float32 -> float64 passes the gradient through, in float32", function()
    local x = rand(S, -2, 2)
    local w = rand(S, -1, 1)
    local f = function(v) return (hl.sin(v:astype("float32")):astype(F64) * w):sum() end
    local g = hl.grad(f)(x)
    assert.are.equal(F64, g.dtype)
    close(g, hl.cos(x) * w, 1e-6, 1e-7)
    close(hl.jit(hl.grad(f))(x), g, 1e-6, 1e-7)
    -- float32 argument, float64 computation: the gradient comes back float32
    local x32 = x:astype("float32")
    local g32 = hl.grad(function(v) return (hl.sin(v:astype(F64)) * w):sum() end)(x32)
    assert.are.equal("float32", g32.dtype)
    close(g32, hl.cos(x32:astype(F64)) * w, 1e-6, 1e-7)
  end)
  it("cast float64 -> float64 (identity) against finite differences", function()
    local f, args = function(v) return v:astype(F64) * v end, {rand(S, -2, 2)}
    check_grad(f, args)
    check_jit_grad(f, args)
  end)
end)

describe("grad vs finite differences: where and clip", function()
  local S = {3, 4}
  local mask = {}
  for i = 1, 12 do mask[i] = (i % 3 ~= 0) end
  local c = from_flat(mask, S, "bool")
  local cb = from_flat({true, false, true, true}, {4}, "bool")
  grad_cases({
    {"where(c, a, b)", function(a, b) return hl.where(c, a, b) end, {rand(S, -2, 2), rand(S, -2, 2)}},
    {"where(c[4], a[3,1], b[3,4]) broadcasting", function(a, b) return hl.where(cb, a, b) end,
      {rand({3, 1}, -2, 2), rand(S, -2, 2)}},
    {"where(x > 0, x^2, sin(x))", function(x) return hl.where(hl.gt(x, 0), x * x, hl.sin(x)) end,
      {rand(S, -2, 2, nonzero(0.1))}},
    {"where(x > 0, x, 0.5) with a Lua number branch", function(x) return hl.where(hl.gt(x, 0), x, 0.5) end,
      {rand(S, -2, 2, nonzero(0.1))}},
    {"clip(x, -0.5, 0.5)", function(x) return hl.clip(x, -0.5, 0.5) end,
      {rand(S, -1, 1, function(v) return math.abs(math.abs(v) - 0.5) > 0.05 end)}},
    {"clip(x, -0.5) (lower bound only)", function(x) return hl.clip(x, -0.5) end,
      {rand(S, -1, 1, function(v) return math.abs(v + 0.5) > 0.05 end)}},
    {"x:clip(lo, hi) with array bounds", function(x, lo, hi) return x:clip(lo, hi) end,
      {rand(S, -1, 1, function(v) return math.abs(math.abs(v) - 0.5) > 0.05 end),
       from_flat({-0.5, -0.5, -0.5, -0.5}, {4}), from_flat({0.5, 0.5, 0.5, 0.5}, {4})}},
  })
end)

describe("grad vs finite differences: reductions", function()
  local S = {2, 3, 4}
  local x = rand(S, -2, 2)
  local xp = rand(S, 0.5, 1.5, nil)
  -- prod: random signs, magnitudes in [0.5, 1.5]
  local sg = {}
  for i, v in ipairs(flat(xp)) do sg[i] = random() < 0.5 and -v or v end
  local xprod = from_flat(sg, S)
  local axes_list = {{nil, "all axes"}, {1, "axis 1"}, {2, "axis 2"}, {3, "axis 3"}, {-1, "axis -1"},
                     {{1, 3}, "axes {1,3}"}, {{2, 3}, "axes {2,3}"}}
  local cases = {}
  for _, op in ipairs {"sum", "prod", "max", "min", "mean", "logsumexp"} do
    for _, ax in ipairs(axes_list) do
      for _, keep in ipairs {false, true} do
        local axis = ax[1]
        local input = op == "prod" and xprod or x
        local f
        if keep then
          f = function(v) return hl[op](v, axis, true) end
        else
          f = function(v) return hl[op](v, axis) end
        end
        cases[#cases + 1] = {string.format("%s over %s%s", op, ax[2], keep and ", keepdims" or ""), f, {input}}
      end
    end
  end
  cases[#cases + 1] = {"method form x:sum(2) * x:max(2, true)", function(v)
    return hl.expand_dims(v:sum(2), 2) * v:max(2, true)
  end, {x}}
  cases[#cases + 1] = {"x:mean({1,2}, true) with x^2", function(v) return (v * v):mean({1, 2}, true) end, {x}}
  cases[#cases + 1] = {"sum of a [5] vector to 0-d", function(v) return (v * v):sum() end, {rand({5}, -2, 2)}}
  grad_cases(cases)

  grad_cases({
    {"softmax (last axis)", function(v) return hl.nn.softmax(v) end, {rand({3, 4}, -2, 2)}},
    {"softmax axis 1", function(v) return hl.nn.softmax(v, 1) end, {rand({3, 4}, -2, 2)}},
    {"softmax [2,3,4] axis 2", function(v) return hl.nn.softmax(v, 2) end, {rand(S, -2, 2)}},
    {"log_softmax (last axis)", function(v) return hl.nn.log_softmax(v) end, {rand({3, 4}, -2, 2)}},
    {"log_softmax axis 1", function(v) return hl.nn.log_softmax(v, 1) end, {rand({3, 4}, -2, 2)}},
    {"log_softmax [2,3,4] axis -2", function(v) return hl.nn.log_softmax(v, -2) end, {rand(S, -2, 2)}},
    {"x:softmax()", function(v) return v:softmax() end, {rand({5}, -2, 2)}},
  })
end)

describe("grad vs finite differences: matmul and dot", function()
  local function r(s) return rand(s, -1, 1) end
  local mm = function(a, b) return hl.matmul(a, b) end
  grad_cases({
    {"matmul [3,4] @ [4,2]", mm, {r {3, 4}, r {4, 2}}},
    {"matmul [2,3,4] @ [2,4,5] (batched)", mm, {r {2, 3, 4}, r {2, 4, 5}}},
    {"matmul [2,1,3,4] @ [3,4,2] (broadcast batch dims)", mm, {r {2, 1, 3, 4}, r {3, 4, 2}}},
    {"matmul [2,3,4] @ [4,5] (batch on one side)", mm, {r {2, 3, 4}, r {4, 5}}},
    {"matmul [3,4] @ [2,4,5] (batch on the other side)", mm, {r {3, 4}, r {2, 4, 5}}},
    {"matmul [4] @ [4,2] (1-d left)", mm, {r {4}, r {4, 2}}},
    {"matmul [3,4] @ [4] (1-d right)", mm, {r {3, 4}, r {4}}},
    {"matmul [4] @ [4] (0-d result)", mm, {r {4}, r {4}}},
    {"matmul [2,3,4] @ [4] (batched, 1-d right)", mm, {r {2, 3, 4}, r {4}}},
    {"matmul [4] @ [2,4,3] (1-d left, batched right)", mm, {r {4}, r {2, 4, 3}}},
    {"x:matmul(y) with the same matrix twice: x @ x", function(a) return a:matmul(a) end, {r {3, 3}}},
    {"dot [4] . [4]", function(a, b) return hl.dot(a, b) end, {r {4}, r {4}}},
    {"dot [3,4] . [4,2]", function(a, b) return hl.dot(a, b) end, {r {3, 4}, r {4, 2}}},
    {"dot 0-d . [3]", function(a, b) return hl.dot(a, b) end, {rand({}, 0.5, 1.5), r {3}}},
    {"x:dot(y) [3] . [3,2]", function(a, b) return a:dot(b) end, {r {3}, r {3, 2}}},
  })
end)

describe("grad vs finite differences: views and shape ops", function()
  local x = rand({2, 3, 4}, -2, 2)
  local m = rand({3, 4}, -2, 2)
  -- f(x) followed by a nonlinear elementwise op, so the view's transpose meets a non-constant cotangent
  local function v(name, f, args) return {name, function(...) return hl.sin(f(...)) end, args} end
  grad_cases({
    v("transpose (default: reversed)", function(a) return hl.transpose(a) end, {x}),
    v("transpose perm {2,3,1}", function(a) return hl.transpose(a, {2, 3, 1}) end, {x}),
    v("transpose perm {1,3,2}", function(a) return a:transpose({1, 3, 2}) end, {x}),
    v("transpose perm {-1,1,2} (negative axis)", function(a) return hl.transpose(a, {-1, 1, 2}) end, {x}),
    v("x.T of a matrix", function(a) return a.T end, {m}),
    v("x.T of a [2,3,4] array", function(a) return a.T end, {x}),
    v("x.T @ x", function(a) return hl.matmul(a.T, a) end, {m}),
    v("reshape {6,4}", function(a) return hl.reshape(a, {6, 4}) end, {x}),
    v("reshape {4,-1}", function(a) return a:reshape({4, -1}) end, {x}),
    v("reshape to 24", function(a) return hl.reshape(a, 24) end, {x}),
    v("flatten", function(a) return hl.flatten(a) end, {x}),
    v("x:flatten() of a transpose", function(a) return a.T:flatten() end, {x}),
    v("expand_dims axis 1", function(a) return hl.expand_dims(a, 1) end, {m}),
    v("expand_dims axis -1", function(a) return a:expand_dims(-1) end, {m}),
    v("expand_dims axis 2", function(a) return hl.expand_dims(a, 2) end, {m}),
    v("squeeze (all size-1 axes)", function(a) return hl.squeeze(a) end, {rand({3, 1, 4, 1}, -2, 2)}),
    v("squeeze axis 2", function(a) return a:squeeze(2) end, {rand({3, 1, 4, 1}, -2, 2)}),
    v("squeeze axes {2,4}", function(a) return hl.squeeze(a, {2, 4}) end, {rand({3, 1, 4, 1}, -2, 2)}),
    v("broadcast_to [3,1] -> [2,3,4]", function(a) return hl.broadcast_to(a, {2, 3, 4}) end, {rand({3, 1}, -2, 2)}),
    v("broadcast_to [4] -> [3,4]", function(a) return a:broadcast_to({3, 4}) end, {rand({4}, -2, 2)}),
    v("broadcast_to [] -> [2,3]", function(a) return hl.broadcast_to(a, {2, 3}) end, {rand({}, -2, 2)}),
    v("broadcast_to [3,4] -> [3,4] (no-op)", function(a) return hl.broadcast_to(a, {3, 4}) end, {m}),
    v("concatenate axis 1", function(a, b, c) return hl.concatenate({a, b, c}, 1) end,
      {rand({2, 4}, -2, 2), rand({1, 4}, -2, 2), rand({3, 4}, -2, 2)}),
    v("concatenate axis 2", function(a, b) return hl.concatenate({a, b}, 2) end,
      {rand({3, 2}, -2, 2), rand({3, 5}, -2, 2)}),
    v("concatenate axis -1 of [2,3,x]", function(a, b) return hl.concatenate({a, b}, -1) end,
      {rand({2, 3, 1}, -2, 2), rand({2, 3, 2}, -2, 2)}),
    v("concatenate default axis", function(a, b) return hl.concatenate({a, b}) end, {rand({2}, -2, 2), rand({3}, -2, 2)}),
    v("concatenate {x, x * 2, x} (one input used three times)", function(a)
      return hl.concatenate({a, a * 2, a}, 2)
    end, {m}),
  })
end)

describe("grad vs finite differences: indexing", function()
  local x = rand({4, 5, 3}, -2, 2)
  local m = rand({4, 5}, -2, 2)
  local function v(name, f, args) return {name, function(...) return hl.exp(f(...)) end, args} end
  grad_cases({
    v("x[2]", function(a) return a[2] end, {x}),
    v("x[-1]", function(a) return a[-1] end, {x}),
    v("x[{2, 3}]", function(a) return a[{2, 3}] end, {x}),
    v("x[{2, 3, 1}] (0-d)", function(a) return a[{2, 3, 1}] end, {x}),
    v("x[{{2, 3}}] range", function(a) return a[{{2, 3}}] end, {x}),
    v("x[{{}, {2, -2}}] whole axis and negative bound", function(a) return a[{{}, {2, -2}}] end, {x}),
    v("x[{{1, 4, 2}, {}, {2, 3}}] strided", function(a) return a[{{1, 4, 2}, {}, {2, 3}}] end, {x}),
    v("x[{{}, {1, 5, 3}}] stride 3", function(a) return a[{{}, {1, 5, 3}}] end, {x}),
    v("x[{{4, 1, -1}}] reversed", function(a) return a[{{4, 1, -1}}] end, {x}),
    v("x[{{}, {5, 1, -2}}] reversed stride 2", function(a) return a[{{}, {5, 1, -2}}] end, {x}),
    v("x[{{-1, 2, -2}, 3, {3, 1, -1}}] mixed", function(a) return a[{{-1, 2, -2}, 3, {3, 1, -1}}] end, {x}),
    v("m[{2, {1, 5, 2}}]", function(a) return a[{2, {1, 5, 2}}] end, {m}),
    v("m[{{}, -1}] last column", function(a) return a[{{}, -1}] end, {m}),
    v("overlapping slices m[{{1,3}}] + m[{{2,4}}]", function(a) return a[{{1, 3}}] + a[{{2, 4}}] end, {m}),
    v("m[1] * m[-1] + m[{{}, 2}]:sum()", function(a) return a[1] * a[-1] + a[{{}, 2}]:sum() end, {m}),
  })
end)

---------------------------------------------------------------- 2. second derivatives

describe("second derivatives", function()
  local function scalar(v) return hl.array(v, F64) end
  local cases = {
    {"sin", function(x) return hl.sin(x) end, function(v) return -math.sin(v) end, 0.7},
    {"exp", function(x) return hl.exp(x) end, function(v) return math.exp(v) end, 0.3},
    {"x^3", function(x) return x ^ 3 end, function(v) return 6 * v end, 1.3},
    {"x*x*x", function(x) return x * x * x end, function(v) return 6 * v end, -0.8},
    {"tanh", function(x) return hl.tanh(x) end, function(v)
      local t = math.tanh(v)
      return -2 * t * (1 - t * t)
    end, 0.4},
    {"log", function(x) return hl.log(x) end, function(v) return -1 / (v * v) end, 1.7},
    {"sqrt", function(x) return hl.sqrt(x) end, function(v) return -0.25 * v ^ -1.5 end, 2.1},
    {"1 / x", function(x) return 1 / x end, function(v) return 2 / v ^ 3 end, 0.9},
    {"x * sin(x)", function(x) return x * hl.sin(x) end, function(v) return 2 * math.cos(v) - v * math.sin(v) end, 1.1},
  }
  for _, c in ipairs(cases) do
    it("grad(grad(" .. c[1] .. "))", function()
      local x = scalar(c[4])
      local gg = hl.grad(hl.grad(c[2]))
      close(gg(x), c[3](c[4]), 1e-12, 1e-14, "eager")
      close(hl.jit(gg)(x), c[3](c[4]), 1e-10, 1e-12, "jit")
    end)
  end
  it("third derivative of x^4 is 24x", function()
    local g3 = hl.grad(hl.grad(hl.grad(function(x) return x ^ 4 end)))
    close(g3(scalar(0.6)), 24 * 0.6, 1e-12, 1e-14)
    close(hl.jit(g3)(scalar(0.6)), 24 * 0.6, 1e-10, 1e-12)
  end)
  it("d/dx of x * grad(sin)(x) = cos(x) - x sin(x)", function()
    local f = function(x) return x * hl.grad(hl.sin)(x) end
    close(hl.grad(f)(scalar(0.5)), math.cos(0.5) - 0.5 * math.sin(0.5), 1e-12)
  end)

  local function hess_case(name, f, x)
    it("hessian of " .. name .. " against differences of the gradient", function()
      local H = hl.hessian(f)(x)
      local shape = x.shape
      for _, s in ipairs(x.shape) do shape[#shape + 1] = s end
      assert.are.equal(shape_str(shape), shape_str(H.shape))
      local fd = fd_jac(hl.grad(f), x)
      close(H, fd, FD_RTOL, FD_RTOL * math.max(1, max_abs(fd)), "hessian vs differences")
      close(H, hl.transpose(hl.reshape(H, {x.size, x.size})):reshape(H.shape), 1e-10, 1e-12, "symmetry")
      close(hl.jit(hl.hessian(f))(x), H, JIT_RTOL, JIT_ATOL * math.max(1, max_abs(H)), "jit hessian")
    end)
  end
  hess_case("sum(sin(x) * x^2)", function(x) return (hl.sin(x) * x * x):sum() end, rand({4}, -2, 2))
  hess_case("logsumexp(x)", function(x) return hl.logsumexp(x) end, rand({4}, -2, 2))
  local A = rand({3, 4}, -1, 1)
  hess_case("sum(tanh(A @ x))", function(x) return hl.tanh(hl.matmul(A, x)):sum() end, rand({4}, -1, 1))
  hess_case("sum(exp(x) * x[1]) on a [2,2] input", function(x) return (hl.exp(x) * x[1]):sum() end, rand({2, 2}, -1, 1))
  hess_case("prod(x)", function(x) return hl.prod(x) end, rand({4}, 0.5, 1.5))

  it("hessian of x @ A @ x equals A + A^T", function()
    local Am = rand({4, 4}, -1, 1)
    local f = function(x) return hl.matmul(hl.matmul(x, Am), x) end
    local x = rand({4}, -1, 1)
    local want = Am + Am.T
    close(hl.hessian(f)(x), want, 1e-12, 1e-14)
    close(hl.jit(hl.hessian(f))(x), want, 1e-10, 1e-12)
    -- and the gradient is (A + A^T) x
    close(hl.grad(f)(x), hl.matmul(want, x), 1e-12, 1e-14)
  end)
  it("hessian with argnums 2", function()
    local f = function(a, b) return (a * b * b * b):sum() end
    local a, b = rand({3}, -1, 1), rand({3}, -1, 1)
    local H = hl.hessian(f, 2)(a, b)
    local d = flat(a * b * 6)
    local want = {}
    for i = 1, 3 do
      want[i] = {}
      for j = 1, 3 do want[i][j] = i == j and d[i] or 0 end
    end
    close(H, want, 1e-12, 1e-14)
  end)
end)

---------------------------------------------------------------- 3. Jacobians, jvp, vjp

describe("jacobians", function()
  local A = rand({3, 4}, -1, 1)
  local funcs = {
    {"elementwise sin(x) * x", function(x) return hl.sin(x) * x end, rand({4}, -2, 2)},
    {"matmul A @ x + x[1:3]^2", function(x) return hl.matmul(A, x) + x[{{1, 3}}] ^ 2 end, rand({4}, -2, 2)},
    {"softmax", function(x) return hl.nn.softmax(x) end, rand({5}, -2, 2)},
    {"log_softmax of a [2,3] (2-d in and out)", function(x) return hl.nn.log_softmax(x) end, rand({2, 3}, -2, 2)},
    {"x:sum(1) of a [2,3] (shape [3] out, [2,3] in)", function(x) return (x * x):sum(1) end, rand({2, 3}, -2, 2)},
    {"sum to 0-d", function(x) return hl.exp(x):sum() end, rand({3}, -1, 1)},
  }
  for _, c in ipairs(funcs) do
    local name, f, x = c[1], c[2], c[3]
    it("jacfwd = jacrev = differences: " .. name, function()
      local out = f(x)
      local Jf = hl.jacfwd(f)(x)
      local Jr = hl.jacrev(f)(x)
      local shape = out.shape
      for _, s in ipairs(x.shape) do shape[#shape + 1] = s end
      assert.are.equal(shape_str(shape), shape_str(Jf.shape))
      assert.are.equal(shape_str(shape), shape_str(Jr.shape))
      close(Jf, Jr, 1e-12, 1e-14, "jacfwd vs jacrev")
      local fd = fd_jac(f, x)
      close(Jr, fd, FD_RTOL, FD_RTOL * math.max(1, max_abs(fd)), "jacrev vs differences")
      local tol = JIT_ATOL * math.max(1, max_abs(Jr))
      close(hl.jit(hl.jacfwd(f))(x), Jf, JIT_RTOL, tol, "jit jacfwd")
      close(hl.jit(hl.jacrev(f))(x), Jr, JIT_RTOL, tol, "jit jacrev")
    end)
    it("jvp = J @ t and vjp = ct @ J: " .. name, function()
      local out = f(x)
      local J = hl.reshape(hl.jacrev(f)(x), {out.size, x.size})
      local t = rand(x.shape, -1, 1)
      local o, tout = hl.jvp(f, {x}, {t})
      close(o, out, 1e-14, 0, "jvp primal out")
      close(tout, hl.reshape(hl.matmul(J, hl.flatten(t)), out.shape), 1e-12, 1e-14, "jvp tangent")
      local ct = rand(out.shape, -1, 1)
      local o2, back = hl.vjp(f, x)
      close(o2, out, 1e-14, 0, "vjp primal out")
      local g = back(ct)
      close(g, hl.reshape(hl.matmul(hl.reshape(ct, {out.size}), J), x.shape), 1e-12, 1e-14, "vjp cotangent")
      -- under jit
      local jo, jt = hl.jit(function(a, b) return hl.jvp(f, {a}, {b}) end)(x, t)
      close(jo, out, JIT_RTOL, JIT_ATOL)
      close(jt, tout, JIT_RTOL, JIT_ATOL * math.max(1, max_abs(tout)), "jit jvp")
      local jg = hl.jit(function(a, c)
        local _, b = hl.vjp(f, a)
        return b(c)
      end)(x, ct)
      close(jg, g, JIT_RTOL, JIT_ATOL * math.max(1, max_abs(g)), "jit vjp")
    end)
  end

  it("jacobians with argnums {1, 2}", function()
    local f = function(a, b) return a * b end
    local a, b = rand({3}, -1, 1), rand({3}, -1, 1)
    local function diag(v)
      local d = flat(v)
      local t = {}
      for i = 1, #d do
        t[i] = {}
        for j = 1, #d do t[i][j] = i == j and d[i] or 0 end
      end
      return t
    end
    for _, jac in ipairs {hl.jacfwd, hl.jacrev} do
      local J = jac(f, {1, 2})(a, b)
      close(J[1], diag(b), 1e-14)
      close(J[2], diag(a), 1e-14)
      local J2 = jac(f, 2)(a, b)
      close(J2, diag(a), 1e-14)
    end
  end)
  it("jvp and vjp with two primals", function()
    local f = function(a, b) return hl.sin(a) * b end
    local a, b = rand({3}, -1, 1), rand({3}, -1, 1)
    local ta, tb = rand({3}, -1, 1), rand({3}, -1, 1)
    local _, t = hl.jvp(f, {a, b}, {ta, tb})
    close(t, hl.cos(a) * b * ta + hl.sin(a) * tb, 1e-12, 1e-14)
    local _, back = hl.vjp(f, a, b)
    local ct = rand({3}, -1, 1)
    local ga, gb = back(ct)
    close(ga, hl.cos(a) * b * ct, 1e-12, 1e-14)
    close(gb, hl.sin(a) * ct, 1e-12, 1e-14)
  end)
  it("vjp of a function returning a table", function()
    local f = function(a) return {s = hl.sin(a), e = {hl.exp(a)}} end
    local a = rand({3}, -1, 1)
    local out, back = hl.vjp(f, a)
    close(out.s, hl.sin(a))
    close(out.e[1], hl.exp(a))
    local c1, c2 = rand({3}, -1, 1), rand({3}, -1, 1)
    close(back({s = c1, e = {c2}}), hl.cos(a) * c1 + hl.exp(a) * c2, 1e-12, 1e-14)
  end)
end)

---------------------------------------------------------------- 4. MLP against hand-written backprop

describe("MLP", function()
  local params = {w1 = rand({3, 4}, -1, 1), b1 = rand({4}, -0.5, 0.5), w2 = rand({4, 2}, -1, 1), b2 = rand({2}, -0.5, 0.5)}
  local x, y = rand({5, 3}, -1, 1), rand({5, 2}, -1, 1)
  local function loss(p, xs, ys)
    local h = hl.tanh(hl.matmul(xs, p.w1) + p.b1)
    local out = hl.matmul(h, p.w2) + p.b2
    return hl.mean((out - ys) ^ 2)
  end
  local function backprop(p, xs, ys)
    local z = hl.matmul(xs, p.w1) + p.b1
    local h = hl.tanh(z)
    local out = hl.matmul(h, p.w2) + p.b2
    local d = (out - ys) * (2 / out.size)
    local dh = hl.matmul(d, hl.transpose(p.w2))
    local dz = dh * (1 - h * h)
    return {
      w2 = hl.matmul(hl.transpose(h), d), b2 = hl.sum(d, 1),
      w1 = hl.matmul(hl.transpose(xs), dz), b1 = hl.sum(dz, 1),
    }
  end
  it("grad of the loss with nested-table params equals backprop", function()
    local want = backprop(params, x, y)
    local g = hl.grad(loss)(params, x, y)
    assert.is_table(g)
    for _, k in ipairs {"w1", "b1", "w2", "b2"} do
      close(g[k], want[k], 1e-12, 1e-14, "eager " .. k)
    end
    close_tree(g, want, 1e-12, 1e-14, "eager")
    local jg = hl.jit(hl.grad(loss))(params, x, y)
    close_tree(jg, want, JIT_RTOL, JIT_ATOL, "jit")
  end)
  it("value_and_grad gives the loss and the same gradient, eager and under jit", function()
    local want = backprop(params, x, y)
    local v, g = hl.value_and_grad(loss)(params, x, y)
    close(v, loss(params, x, y), 1e-14)
    close_tree(g, want, 1e-12, 1e-14)
    local jv, jg = hl.jit(hl.value_and_grad(loss))(params, x, y)
    close(jv, v, JIT_RTOL, JIT_ATOL)
    close_tree(jg, want, JIT_RTOL, JIT_ATOL, "jit")
  end)
  it("gradient against finite differences on every parameter", function()
    local g = hl.grad(loss)(params, x, y)
    for _, k in ipairs {"w1", "b1", "w2", "b2"} do
      local fd = fd_grad(function(leaf)
        local p = {w1 = params.w1, b1 = params.b1, w2 = params.w2, b2 = params.b2}
        p[k] = leaf
        return loss(p, x, y)
      end, {params[k]}, 1)
      close(g[k], fd, FD_RTOL, FD_RTOL * math.max(1, max_abs(fd)), k)
    end
  end)
  it("one SGD step lowers the loss", function()
    local g = hl.grad(loss)(params, x, y)
    local p2 = hl.tree.map(function(p, d) return p - d * 0.1 end, params, g)
    assert.is_true(loss(p2, x, y):item() < loss(params, x, y):item())
  end)
end)

---------------------------------------------------------------- 5. Lua control flow outside jit

describe("Lua control flow under grad", function()
  local function f(x)
    if x:sum():item() > 0 then
      return (x * x):sum()
    else
      return (x * x * x):sum()
    end
  end
  it("takes the branch of the actual values", function()
    local xp = hl.array({1, 2, -0.5}, F64)
    local xn = hl.array({-1, -2, 0.5}, F64)
    close(hl.grad(f)(xp), {2, 4, -1}, 1e-14)
    close(hl.grad(f)(xn), {3, 12, 0.75}, 1e-14)
  end)
  it("a loop whose trip count depends on a value", function()
    -- multiply by x until the product exceeds 10: x = 2 gives x^4 (2, 4, 8, 16), d/dx = 4x^3
    local g = function(x)
      local p = x
      while p:item() <= 10 do p = p * x end
      return p
    end
    close(hl.grad(g)(hl.array(2, F64)), 32, 1e-14)
    close(hl.grad(g)(hl.array(5, F64)), 10, 1e-14)   -- 25 after one step: x^2
  end)
end)

---------------------------------------------------------------- 6. semantics

describe("conventions", function()
  -- each test runs twice: T = plain call (eager tape), T = hl.jit
  local function both(name, body)
    it(name, function() body(function(f) return f end) end)
    it(name .. " [jit]", function() body(hl.jit) end)
  end
  both("d|x|/dx at 0 is 0", function(T)
    local x = hl.array({-2, 0, 3, 0}, F64)
    close(T(hl.grad(function(v) return hl.abs(v):sum() end))(x), {-1, 0, 1, 0}, 0)
  end)
  both("maximum and minimum split ties evenly", function(T)
    local a = hl.array({1, 2, 3, -1}, F64)
    local b = hl.array({1, 5, 0, -1}, F64)
    local gmax = T(hl.grad(function(u, v) return hl.maximum(u, v):sum() end, {1, 2}))(a, b)
    close(gmax[1], {0.5, 0, 1, 0.5}, 0)
    close(gmax[2], {0.5, 1, 0, 0.5}, 0)
    local gmin = T(hl.grad(function(u, v) return hl.minimum(u, v):sum() end, {1, 2}))(a, b)
    close(gmin[1], {0.5, 1, 0, 0.5}, 0)
    close(gmin[2], {0.5, 0, 1, 0.5}, 0)
    -- against a Lua number: x tied with the constant gets half
    close(T(hl.grad(function(u) return hl.maximum(u, 2):sum() end))(hl.array({2, 3, 1}, F64)), {0.5, 1, 0}, 0)
  end)
  both("max and min reductions split the gradient among tied extremes", function(T)
    close(T(hl.grad(function(v) return hl.max(v) end))(hl.array({1, 3, 3, 2}, F64)), {0, 0.5, 0.5, 0}, 0)
    close(T(hl.grad(function(v) return hl.min(v) end))(hl.array({2, 1, 1, 1}, F64)), {0, 1 / 3, 1 / 3, 1 / 3}, 1e-15)
    local m = hl.array({{1, 4, 4}, {5, 2, 5}}, F64)
    local w = hl.array({{10}, {100}}, F64)
    close(T(hl.grad(function(v) return (v:max(2, true) * w):sum() end))(m), {{0, 5, 5}, {50, 0, 50}}, 0)
    close(T(hl.grad(function(v) return (v:max(1) * hl.array({1, 2, 3}, F64)):sum() end))(m), {{0, 2, 0}, {1, 0, 3}}, 0)
    close(T(hl.grad(function(v) return (v:min(1) * hl.array({1, 2, 3}, F64)):sum() end))(hl.array({{1, 4, 4}, {1, 2, 4}}, F64)),
          {{0.5, 0, 1.5}, {0.5, 2, 1.5}}, 0)
  end)
  both("where sends the cotangent only to the chosen branch", function(T)
    local c = hl.array({true, false, true, false}, "bool")
    local a = hl.array({1, 2, 3, 4}, F64)
    local b = hl.array({5, 6, 7, 8}, F64)
    local w = hl.array({1, 10, 100, 1000}, F64)
    local g = T(hl.grad(function(u, v) return (hl.where(c, u * u, v * 3) * w):sum() end, {1, 2}))(a, b)
    close(g[1], {2, 0, 600, 0}, 0)
    close(g[2], {0, 30, 0, 3000}, 0)
  end)
  both("stop_gradient blocks the gradient", function(T)
    local x = hl.array({1, 2, 3}, F64)
    close(T(hl.grad(function(v) return (v * hl.stop_gradient(v)):sum() end))(x), {1, 2, 3}, 0)
    close(T(hl.grad(function(v) return (hl.stop_gradient(v) ^ 2):sum() end))(x), {0, 0, 0}, 0)
    -- on a table
    local g = T(hl.grad(function(v)
      local t = hl.stop_gradient({v, {v * 2}})
      return (t[1] * t[2][1] + v):sum()
    end))(x)
    close(g, {1, 1, 1}, 0)
    -- the value is unchanged
    close(T(function(v) return hl.stop_gradient(v) end)(x), x, 0)
  end)
  both("floor, ceil, round and sign have zero gradient (exactly)", function(T)
    local x = hl.array({-1.7, -0.2, 0.3, 2.6}, F64)
    for _, op in ipairs {"floor", "ceil", "round", "sign"} do
      close(T(hl.grad(function(v) return (hl[op](v) * v):sum() end))(x), hl[op](x), 0, 0, op)
    end
    -- a cast to an integer type is a constant too
    close(T(hl.grad(function(v) return (v:astype("int32") * v):sum() end))(x), {-1, 0, 0, 2}, 0, 0, "int32 cast")
  end)
  both("prod with zeros: the product of the other factors", function(T)
    local g = T(hl.grad(function(v) return hl.prod(v) end))
    close(g(hl.array({2, 0, 3, 4}, F64)), {0, 24, 0, 0}, 0, 0, "one zero")
    close(g(hl.array({2, 0, 3, 0}, F64)), {0, 0, 0, 0}, 0, 0, "two zeros")
    close(T(hl.grad(function(v) return hl.prod(v, 2):sum() end))(hl.array({{2, 0, 3}, {1, 2, 5}}, F64)),
          {{0, 6, 0}, {10, 5, 2}}, 0, 0, "rows")
  end)
  both("x^2 and x^3 at 0 have gradient 0 (no NaN from log(0))", function(T)
    local x = hl.array({0, 1.5}, F64)
    close(T(hl.grad(function(v) return (v ^ 2):sum() end))(x), {0, 3}, 0, 0, "x^2")
    close(T(hl.grad(function(v) return (v ^ 3):sum() end))(x), {0, 6.75}, 0, 0, "x^3")
    close(T(hl.grad(function(v) return hl.pow(v, hl.array({2, 2}, F64)):sum() end))(x), {0, 3}, 0, 0, "pow(x, array 2)")
  end)
end)

describe("transformation API", function()
  local x = hl.array({0.5, -1, 2}, F64)
  it("has_aux returns the auxiliary data, for grad and value_and_grad", function()
    local f = function(v)
      local s = (v * v):sum()
      return s, {sq = v * v, n = 3}
    end
    local g, aux = hl.grad(f, 1, {has_aux = true})(x)
    close(g, {1, -2, 4}, 0)
    close(aux.sq, {0.25, 1, 4}, 0)
    assert.are.equal(3, aux.n)
    local v, g2, aux2 = hl.value_and_grad(f, 1, {has_aux = true})(x)
    close(v, 5.25, 0)
    close(g2, {1, -2, 4}, 0)
    close(aux2.sq, {0.25, 1, 4}, 0)
    local jg, jaux = hl.jit(hl.grad(function(u) return (u * u):sum(), hl.sin(u) end, 1, {has_aux = true}))(x)
    close(jg, {1, -2, 4}, 1e-14)
    close(jaux, hl.sin(x), 1e-14)
  end)
  it("argnums as a table gives a table of gradients, as a number a single gradient", function()
    local a, b, c = hl.array({1, 2}, F64), hl.array({3, 4}, F64), hl.array({5, 6}, F64)
    local f = function(u, v, w) return (u * v * w * w):sum() end
    local g = hl.grad(f, {1, 3})(a, b, c)
    assert.are.equal(2, #g)
    close(g[1], {75, 144}, 0)   -- v w^2
    close(g[2], {30, 96}, 0)    -- 2 u v w
    local jg = hl.jit(hl.grad(f, {1, 3}))(a, b, c)
    close(jg[1], {75, 144}, 1e-14)
    close(jg[2], {30, 96}, 1e-14)
    close(hl.grad(f, 2)(a, b, c), {25, 72}, 0)
    close(hl.grad(f)(a, b, c), {75, 144}, 0)
    local g1 = hl.grad(f, {2})(a, b, c)
    assert.is_table(g1)
    close(g1[1], {25, 72}, 0)
    local v, vg = hl.value_and_grad(f, {2, 1})(a, b, c)
    close(v, 75 + 288, 0)
    close(vg[1], {25, 72}, 0)
    close(vg[2], {75, 144}, 0)
  end)
  it("pytree arguments give gradients of the same structure", function()
    local p = {hl.array({1, 2}, F64), {hl.array(3, F64), hl.array({{1, 2}}, F64)}, scale = hl.array(0.5, F64),
               inner = {w = hl.array({4, 5}, F64)}}
    local f = function(t)
      return (t[1] * t[2][1]):sum() + (t[2][2] * t.scale):sum() + (t.inner.w ^ 2):sum() * t.scale
    end
    local want = {hl.array({3, 3}, F64), {hl.array(3, F64), hl.array({{0.5, 0.5}}, F64)}, scale = hl.array(3 + 41, F64),
                  inner = {w = hl.array({4, 5}, F64)}}
    close_tree(hl.grad(f)(p), want, 0)
    close_tree(hl.jit(hl.grad(f))(p), want, 1e-14)
    -- vjp of a pytree argument
    local _, back = hl.vjp(f, p)
    close_tree(back(hl.array(2, F64)), hl.tree.map(function(l) return l * 2 end, want), 0)
  end)
  it("value_and_grad returns the value", function()
    local f = function(v) return hl.exp(v):sum() end
    local v, g = hl.value_and_grad(f)(x)
    close(v, math.exp(0.5) + math.exp(-1) + math.exp(2), 1e-15)
    close(g, hl.exp(x), 1e-15)
    local jv, jg = hl.jit(hl.value_and_grad(f))(x)
    close(jv, v, 1e-14)
    close(jg, g, 1e-14)
  end)
  it("a function not depending on x has zero gradient", function()
    local y = hl.array({1, 2}, F64)
    local g = hl.grad(function(a, b) return (b * b):sum() end)(x, y)
    assert.are.equal(F64, g.dtype)
    assert.are.equal("[3]", shape_str(g.shape))
    close(g, {0, 0, 0}, 0)
    local g2 = hl.grad(function(_) return hl.array(2.5, F64) end)(x)
    close(g2, {0, 0, 0}, 0)
    local g3 = hl.jit(hl.grad(function(a, b) return (b * b):sum() end))(x, y)
    close(g3, {0, 0, 0}, 0)
    -- through stop_gradient only
    close(hl.grad(function(a) return hl.stop_gradient(a):sum() end)(x), {0, 0, 0}, 0)
  end)
  -- found by the program fuzzer: under jit, the cotangent of a sum (a broadcast constant) summed
  -- back over broadcast axes was added once, not once per element (Halide runs an update that
  -- names no RDom variable once)
  it("sums the cotangent of a broadcast over its axes under jit (a bias gradient, repeat, tile)", function()
    local X, W, b = hl.ones({4, 3}, F64), hl.ones({3, 2}, F64), hl.zeros(2, F64)
    local bias = hl.grad(function(bb) return hl.sum(hl.matmul(X, W) + bb) end)
    close(bias(b), {4, 4}, 0)
    close(hl.jit(bias)(b), {4, 4}, 0)
    close(hl.jit(hl.grad(function(bb) return hl.mean(hl.matmul(X, W) + bb) * 8 end))(b), {4, 4}, 1e-15)
    local m = hl.array({{1, 2}, {3, 4}}, F64)
    for _, f in ipairs {function(a) return hl["repeat"](a, 3, 2) end, function(a) return hl.tile(a, {1, 3}) end,
                        function(a) return hl.broadcast_to(a, {3, 2, 2}) end} do
      local g = hl.grad(function(a) return hl.sum(f(a)) end)
      close(g(m), {{3, 3}, {3, 3}}, 0)
      close(hl.jit(g)(m), {{3, 3}, {3, 3}}, 0)
    end
    -- over a zero-length axis: no terms, a zero gradient
    close(hl.jit(hl.grad(function(a) return hl.sum(hl.broadcast_to(a, {0, 2, 2})) + hl.sum(a) end))(m), {{1, 1}, {1, 1}}, 0)
  end)
  it("float32 inputs give float32 gradients", function()
    local x32 = hl.array({0.5, -1, 2}, "float32")
    local f = function(v) return (hl.sin(v) * v):sum() end
    local g = hl.grad(f)(x32)
    assert.are.equal("float32", g.dtype)
    local want = {}
    for i, v in ipairs {0.5, -1, 2} do want[i] = math.cos(v) * v + math.sin(v) end
    close(g, want, 1e-6, 1e-6)
    local jg = hl.jit(hl.grad(f))(x32)
    assert.are.equal("float32", jg.dtype)
    close(jg, want, 1e-6, 1e-6)
    local v, vg = hl.value_and_grad(f)(x32)
    assert.are.equal("float32", v.dtype)
    assert.are.equal("float32", vg.dtype)
    local _, t = hl.jvp(f, {x32}, {hl.ones({3}, "float32")})
    assert.are.equal("float32", t.dtype)
    close(t, want[1] + want[2] + want[3], 1e-6, 1e-6)
  end)
  it("integer inputs to vjp get zero cotangents of their dtype", function()
    local n = hl.array({2, 3, 4}, "int32")
    local out, back = hl.vjp(function(a, k) return a * k end, x, n)
    close(out, {1, -3, 8}, 0)
    local ga, gk = back(hl.array({1, 1, 1}, F64))
    close(ga, {2, 3, 4}, 0)
    assert.are.equal("int32", gk.dtype)
    close(gk, {0, 0, 0}, 0)
    local _, back2 = hl.vjp(function(a, m) return hl.where(m, a, 0) end, x, hl.array({true, false, true}, "bool"))
    local ga2, gm = back2(hl.array({1, 2, 3}, F64))
    close(ga2, {1, 0, 3}, 0)
    assert.are.equal("bool", gm.dtype)
    for _, b in ipairs(gm:totable()) do assert.is_false(b) end
  end)
  it("grad with respect to a Lua number argument", function()
    local g = hl.grad(function(a) return hl.sin(a * 1) end)(0.25)
    assert.is_true(hl.core.is_array(g))
    close(g, math.cos(0.25), 1e-6, 1e-7)   -- a Lua number is float32
  end)
end)

describe("custom_vjp", function()
  local x = hl.array({0.3, -1.2, 2}, F64)
  it("without a transformation it runs f", function()
    local f = hl.custom_vjp(function(v) return hl.sin(v) end, function(v) return hl.sin(v) * 100, 0 end,
                            function(_, g) return g end)
    close(f(x), hl.sin(x), 0)
  end)
  it("bwd is used: a bwd returning 2*g differs from the true gradient", function()
    local f = hl.custom_vjp(function(v) return hl.sin(v) end,
                            function(v) return hl.sin(v), hl.cos(v) end,
                            function(_, g) return 2 * g end)
    local loss = function(v) return (f(v) * hl.array({1, 2, 3}, F64)):sum() end
    local g = hl.grad(loss)(x)
    close(g, {2, 4, 6}, 0)
    close(hl.jit(hl.grad(loss))(x), {2, 4, 6}, 1e-14)
    local _, back = hl.vjp(f, x)
    close(back(hl.array({1, 1, 1}, F64)), {2, 2, 2}, 0)
    -- the forward value is f's
    close(hl.value_and_grad(function(v) return f(v):sum() end)(x), hl.sin(x):sum(), 1e-14)
  end)
  it("bwd with residuals gives the true gradient; chain rule around it", function()
    local f = hl.custom_vjp(function(v) return hl.sin(v) end,
                            function(v) return hl.sin(v), hl.cos(v) end,
                            function(cosv, g) return g * cosv end)
    local loss = function(v) return (f(v * 2) ^ 2):sum() end
    local want = hl.sin(x * 2) * hl.cos(x * 2) * 4
    close(hl.grad(loss)(x), want, 1e-12, 1e-14)
    close(hl.jit(hl.grad(loss))(x), want, JIT_RTOL, JIT_ATOL)
  end)
  it("two inputs: one cotangent per input", function()
    local f = hl.custom_vjp(function(a, b) return a * b end,
                            function(a, b) return a * b, {a, b} end,
                            function(res, g) return g * res[2] * 10, g * res[1] * 100 end)
    local a, b = hl.array({1, 2}, F64), hl.array({3, 4}, F64)
    local g = hl.grad(function(u, v) return f(u, v):sum() end, {1, 2})(a, b)
    close(g[1], {30, 40}, 0)
    close(g[2], {100, 200}, 0)
  end)
end)

---------------------------------------------------------------- 7. errors

describe("errors", function()
  local x = hl.array({{1, 2, 3}, {4, 5, 6}}, F64)
  it("grad of a non-scalar output names the shape and asks for a scalar", function()
    expect_error("halua: grad:", {"scalar", "[2,3]"}, hl.grad(function(v) return v * 2 end), x)
    expect_error("halua: value_and_grad:", {"scalar", "[2,3]"}, hl.value_and_grad(function(v) return v * 2 end), x)
    expect_error("halua: grad:", {"scalar", "[3]"}, hl.jit(hl.grad(function(v) return v:sum(1) end)), x)
  end)
  it("grad with respect to an integer argument names the argument and its dtype", function()
    local n = hl.array({1, 2, 3}, "int32")
    expect_error("halua: grad:", {"argument 2", "int32"}, hl.grad(function(a, b) return (a * b):sum() end, 2), x[1], n)
    expect_error("halua: grad:", {"argument 1", "int64"}, hl.grad(function(a) return a:astype(F64):sum() end),
                 hl.array({1, 2}, "int64"))
    expect_error("halua: value_and_grad:", {"argument 1", "bool"},
                 hl.value_and_grad(function(a) return a:astype(F64):sum() end), hl.array({true}, "bool"))
  end)
  it("jvp with a tangent of the wrong shape", function()
    expect_error("halua: jvp:", {"tangent", "[3]", "[2]"}, hl.jvp, function(a) return a * 2 end,
                 {hl.array({1, 2, 3}, F64)}, {hl.ones({2}, F64)})
    expect_error("halua: jvp:", {"tangent"}, hl.jvp, function(a) return a * 2 end, {x}, {hl.ones({3, 2}, F64)})
  end)
end)
