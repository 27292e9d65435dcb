-- hl.lax: associative_scan, cummax/cummin, reduce_window and top_k against NumPy (np.cumsum,
-- np.maximum.accumulate, sliding_window_view, np.sort/argsort) over shapes, dtypes and axes, eager
-- and under jit; their gradients against central differences; vmap; hl.checkpoint's
-- rematerialisation (the wrapped function runs again in the backward pass, nothing of it is on
-- the tape, gradients equal the plain ones: eager, jit, vmap, jvp, second order); the aliases;
-- the errors' words.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"
local diff_check = require "support.diff_check"

math.randomseed(22)

local function dims(s) return "[" .. table.concat(s, ",") .. "]" end
local function sum_tol(dtype) return dtype == "float32" and {rtol = 1e-4, atol = 1e-4} or nil end

suite("associative_scan and cummax/cummin against NumPy", function(case)
  for _, sp in ipairs {{{9}, 1}, {{1}, 1}, {{0}, 1}, {{4, 7}, 2}, {{4, 7}, 1}, {{3, 5, 6}, -1}, {{3, 5, 6}, 2}, {{2, 33}, -1}, {{64, 2}, 1}} do
    local shape, axis = sp[1], sp[2]
    local ax0 = axis < 0 and #shape + axis or axis - 1
    for _, dtype in ipairs {"float32", "float64", "int32", "int64"} do
      local x = np.rand(shape, -5, 5, dtype)
      local name = string.format("%s %s axis %d", dtype, dims(shape), axis)
      case("associative_scan add " .. name, function() return hl.lax.associative_scan(hl.add, x, {axis = axis}) end,
           string.format("np.cumsum(a, axis=%d).astype(a.dtype)", ax0), {x}, sum_tol(dtype))
      case("associative_scan add reverse " .. name, function() return hl.lax.associative_scan(hl.add, x, {axis = axis, reverse = true}) end,
           string.format("np.flip(np.cumsum(np.flip(a, %d), axis=%d), %d).astype(a.dtype)", ax0, ax0, ax0), {x}, sum_tol(dtype))
      case("cummax " .. name, function() return hl.cummax(x, axis) end, string.format("np.maximum.accumulate(a, axis=%d)", ax0), {x})
      case("cummin " .. name, function() return hl.cummin(x, axis) end, string.format("np.minimum.accumulate(a, axis=%d)", ax0), {x})
      case("cummax reverse " .. name, function() return hl.cummax(x, axis, true) end,
           string.format("np.flip(np.maximum.accumulate(np.flip(a, %d), axis=%d), %d)", ax0, ax0, ax0), {x})
    end
  end
  local p = np.rand({3, 11}, 0.5, 1.5, "float64")
  case("associative_scan mul is np.cumprod", function() return hl.lax.associative_scan(hl.mul, p, {axis = 2}) end, "np.cumprod(a, axis=1)", {p})
  case("a pytree: sums and products at once (the products)", function()
    return hl.lax.associative_scan(function(a, b) return {s = a.s + b.s, p = a.p * b.p} end, {s = p, p = p}, {axis = -1}).p
  end, "np.cumprod(a, axis=1)", {p})
  -- a non-commutative operator: composition of affine maps x -> m x + c, as a linear recurrence
  local m, c = np.rand({13}, 0.5, 1.0, "float64"), np.rand({13}, -1, 1, "float64")
  case("a non-commutative fn (affine recurrence h = m h + c) keeps the order", function()
    return hl.lax.associative_scan(function(a, b) return {a[1] * b[1], b[1] * a[2] + b[2]} end, {m, c})[2]
  end, "np.array([sum(b[j] * np.prod(a[j+1:i+1]) for j in range(i+1)) for i in range(13)])", {m, c})
  local nan = hl.array({1, 0 / 0, 3, -1, 5})
  case("cummax propagates NaN", function() return hl.cummax(nan) end, "np.maximum.accumulate(a)", {nan})
  local y = np.rand({5, 6}, -3, 3, "float32")
  case("the default axis is 1", function() return hl.cummax(y) end, "np.maximum.accumulate(a, axis=0)", {y})
  case("x:cummin(2) method", function() return y:cummin(2) end, "np.minimum.accumulate(a, axis=1)", {y})
  case("hl.lax.cummax is hl.cummax", function() return hl.lax.cummax(y, -1) end, "np.maximum.accumulate(a, axis=-1)", {y})
  case("bool cummax is a running or", function() return hl.cummax(hl.array({false, false, true, false})) end,
       "np.maximum.accumulate(np.array([False, False, True, False]))", {})
  case("float16 cummin", function() return hl.cummin(y:astype("float16"), 2) end, "np.minimum.accumulate(a.astype(np.float16), axis=1)", {y})
  case("jit: cummax", function() return hl.jit(function(v) return hl.cummax(v * 2, 2) end)(y) end,
       "np.maximum.accumulate(a * 2, axis=1)", {y})
  case("jit: associative_scan reverse", function()
    return hl.jit(function(v) return hl.lax.associative_scan(hl.add, v, {reverse = true}) end)(y)
  end, "np.flip(np.cumsum(np.flip(a, 0), axis=0), 0)", {y}, {rtol = 1e-5, atol = 1e-5})
  local big = np.rand({1000}, -1, 1, "float64")
  case("1000 elements (10 levels)", function() return hl.lax.associative_scan(hl.add, big) end, "np.cumsum(a)", {big})
end)

-- sliding windows in NumPy: pad with the identity, window view, reduce, stride
local function np_window(reduce, w, s, pads, fill)
  local nd = #w
  local pw, ax, sl = {}, {}, {}
  for i = 1, nd do
    pw[i] = string.format("(%d,%d)", pads[i][1], pads[i][2])
    ax[i] = tostring(nd + i - 1)
    sl[i] = "::" .. s[i]
  end
  return string.format("np.%s(np.lib.stride_tricks.sliding_window_view(np.pad(a, [%s], constant_values=%s), (%s,)), axis=(%s,))[%s]", reduce,
                       table.concat(pw, ","), fill, table.concat(w, ","), table.concat(ax, ","), table.concat(sl, ","))
end

suite("reduce_window against NumPy's sliding_window_view", function(case)
  local runs = {
    {{6, 7}, {2, 3}, {1, 1}, "VALID"}, {{6, 7}, {2, 2}, {2, 2}, "VALID"}, {{6, 7}, {3, 3}, {2, 1}, "SAME"},
    {{5, 5}, {3, 3}, {1, 1}, "SAME"}, {{10}, {4}, {3}, "VALID"}, {{10}, {4}, {3}, "SAME"}, {{2, 4, 6}, {1, 2, 3}, {1, 2, 2}, "SAME"},
    {{4, 6}, {2, 2}, {1, 2}, {{1, 0}, {2, 1}}}, {{3, 3}, {3, 3}, {1, 1}, "VALID"}, {{8}, {1}, {1}, "VALID"},
  }
  local function pads_of(shape, w, s, padding)
    if type(padding) == "table" then return padding end
    local p = {}
    for i = 1, #shape do
      if padding == "VALID" then p[i] = {0, 0} else
        local out = math.ceil(shape[i] / s[i])
        local t = math.max((out - 1) * s[i] + w[i] - shape[i], 0)
        p[i] = {math.floor(t / 2), t - math.floor(t / 2)}
      end
    end
    return p
  end
  for _, r in ipairs(runs) do
    local shape, w, s, padding = r[1], r[2], r[3], r[4]
    local pads = pads_of(shape, w, s, padding)
    local pname = type(padding) == "string" and padding or "explicit"
    for _, dtype in ipairs {"float32", "float64", "int32"} do
      local x = np.rand(shape, -9, 9, dtype)
      local name = string.format("%s %s window %s strides %s %s", dtype, dims(shape), dims(w), dims(s), pname)
      case("sum " .. name, function() return hl.lax.reduce_window(x, 0, "sum", w, s, padding) end, np_window("sum", w, s, pads, "0"), {x},
           {dtype = false, rtol = 1e-5, atol = 1e-5})
      case("max " .. name, function() return hl.lax.reduce_window(x, nil, "max", w, s, padding) end,
           np_window("max", w, s, pads, dtype == "int32" and "np.iinfo(np.int32).min" or "-np.inf"), {x})
      case("min " .. name, function() return hl.lax.reduce_window(x, nil, "min", w, s, padding) end,
           np_window("min", w, s, pads, dtype == "int32" and "np.iinfo(np.int32).max" or "np.inf"), {x})
    end
  end
  local x = np.rand({5, 6}, -2, 2, "float64")
  case("op as a function (hl.maximum) with init -inf", function() return hl.lax.reduce_window(x, -math.huge, hl.maximum, {2, 2}, {1, 1}) end,
       np_window("max", {2, 2}, {1, 1}, {{0, 0}, {0, 0}}, "0"), {x})
  case("hl.minimum as op: init defaults to its identity", function() return hl.lax.reduce_window(x, nil, hl.minimum, {3, 2}, {1, 2}, "SAME") end,
       np_window("min", {3, 2}, {1, 2}, {{1, 1}, {0, 0}}, "np.inf"), {x})
  case("init joins every window once (sum from 10)", function() return hl.lax.reduce_window(x, 10, "sum", {2, 3}) end,
       np_window("sum", {2, 3}, {1, 1}, {{0, 0}, {0, 0}}, "0") .. " + 10", {x})
  case("padding with init: max from 1.5 over explicit padding", function()
    return hl.lax.reduce_window(x, 1.5, "max", {3, 3}, {1, 1}, {{1, 1}, {1, 1}})
  end, "np.maximum(" .. np_window("max", {3, 3}, {1, 1}, {{1, 1}, {1, 1}}, "1.5") .. ", 1.5)", {x})
  case("window dilation 2", function() return hl.lax.reduce_window(x, 0, "sum", {2, 2}, {1, 1}, "VALID", nil, {2, 2}) end,
       "np.lib.stride_tricks.sliding_window_view(a, (3, 3))[:, :, ::2, ::2].sum(axis=(2, 3))", {x})
  case("base dilation {2, 3}: holes of init between the entries", function()
    return hl.lax.reduce_window(x, 0, "sum", {3, 2}, {1, 2}, "SAME", {2, 3})
  end, "(lambda d: " .. np_window("sum", {3, 2}, {1, 2}, {{1, 1}, {0, 0}}, "0"):gsub("%(a,", "(d,") ..
       ")((lambda z: (z.__setitem__((slice(None, None, 2), slice(None, None, 3)), a), z)[1])(np.zeros((9, 16))))", {x})
  case("base dilation with max: the holes are -inf", function()
    return hl.lax.reduce_window(x, nil, "max", {2, 2}, {1, 1}, "VALID", {2, 1})
  end, "np.max(np.lib.stride_tricks.sliding_window_view((lambda z: (z.__setitem__(slice(None, None, 2), a), z)[1])(np.full((9, 6), -np.inf)), (2, 2)), axis=(2, 3))", {x})
  case("jit: 2x2 max pooling", function()
    return hl.jit(function(v) return hl.lax.reduce_window(v, nil, "max", {2, 2}, {2, 2}) end)(x)
  end, np_window("max", {2, 2}, {2, 2}, {{0, 0}, {0, 0}}, "-np.inf"), {x})
  case("vmap over a batch axis: 1-d windows per row", function()
    return hl.vmap(function(v) return hl.lax.reduce_window(v, 0, "sum", {3}, {2}, "SAME") end)(x)
  end, "np.lib.stride_tricks.sliding_window_view(np.pad(a, [(0,0),(0,1)]), (1, 3))[:, ::2].sum(axis=(2, 3))", {x})
end)

suite("top_k against NumPy's sort", function(case)
  for _, sp in ipairs {{{9}, 3}, {{9}, 9}, {{9}, 0}, {{4, 7}, 2}, {{2, 3, 8}, 5}, {{5, 1}, 1}, {{3, 100}, 10}} do
    local shape, k = sp[1], sp[2]
    for _, dtype in ipairs {"float32", "float64", "int32", "int64"} do
      local x = np.rand(shape, -50, 50, dtype)
      local name = string.format("%s %s k %d", dtype, dims(shape), k)
      case("values " .. name, function() return (hl.lax.top_k(x, k)) end, string.format("-np.sort(-a, axis=-1, kind='stable')[..., :%d]", k), {x})
      case("indices " .. name, function() return select(2, hl.lax.top_k(x, k)) end,
           string.format("np.argsort(-a, axis=-1, kind='stable')[..., :%d] + 1", k), {x}, {dtype = "int64"})
    end
  end
  local ties = hl.array({{3, 1, 3, 2, 3}, {0, 0, 0, 0, 0}})
  case("ties come in index order", function() return select(2, hl.top_k(ties, 4)) end,
       "np.argsort(-a, axis=-1, kind='stable')[..., :4] + 1", {ties}, {dtype = "int64"})
  local nan = hl.array({1, 0 / 0, 3, -1 / 0})
  case("NaN counts as the largest", function() return select(2, hl.top_k(nan, 2)) end, "np.array([2, 3])", {}, {dtype = false})
  local y = np.rand({4, 12}, -3, 3, "float32")
  case("x:top_k(k) method", function() return (y:top_k(3)) end, "-np.sort(-a, axis=-1)[..., :3]", {y})
  case("jit: top_k values", function() return (hl.jit(function(v) return hl.lax.top_k(v, 4) end)(y)) end, "-np.sort(-a, axis=-1)[..., :4]", {y})
  case("jit: top_k indices", function() return select(2, hl.jit(function(v) return hl.lax.top_k(v, 4) end)(y)) end,
       "np.argsort(-a, axis=-1, kind='stable')[..., :4] + 1", {y}, {dtype = "int64"})
  case("vmap over axis 2: columns", function()
    return hl.vmap(function(v) return (hl.lax.top_k(v, 2)) end, 2)(y)
  end, "-np.sort(-a.T, axis=-1)[..., :2]", {y})
end)

describe("lax gradients against central differences", function()
  local function check(name, f, shape, tol)
    it(name, function()
      local x = hl.array(diff_check.flat(hl.random.uniform(hl.random.key(#name), shape, "float64", -2, 2)), "float64"):reshape(shape)
      local g = hl.grad(f)(x)
      diff_check.close(g, diff_check.numeric(f, x), tol or 1e-6, name)
      diff_check.close(hl.jit(hl.grad(f))(x), diff_check.flat(g), 1e-12, name .. " (jit)")
    end)
  end
  local w = hl.random.normal(hl.random.key(5), {4, 6}, "float64")
  check("cummax along axis 2", function(x) return (hl.cummax(x, 2) * w):sum() end, {4, 6})
  check("cummin along axis 1, reversed", function(x) return (hl.cummin(x, 1, true) * w):sum() end, {4, 6})
  check("associative_scan of products", function(x) return (hl.lax.associative_scan(hl.mul, x, {axis = 2}) * w):sum() end, {4, 6})
  check("associative_scan of a pytree", function(x)
    local r = hl.lax.associative_scan(function(a, b) return {a[1] + b[1], hl.maximum(a[2], b[2])} end, {x, hl.sin(x)}, {axis = -1})
    return (r[1] * w):sum() + (r[2] * w):sum()
  end, {4, 6})
  check("reduce_window sum, strides and SAME padding", function(x)
    return (hl.lax.reduce_window(x, 0, "sum", {2, 3}, {2, 2}, "SAME") ^ 2):sum()
  end, {4, 6})
  check("reduce_window max pooling", function(x) return (hl.lax.reduce_window(x, nil, "max", {2, 2}, {2, 2}) * hl.array({{1, 2, 3}, {4, 5, 6}}, "float64")):sum() end, {4, 6})
  check("reduce_window sum with base and window dilation", function(x)
    return (hl.lax.reduce_window(x, 0, "sum", {2, 2}, {1, 2}, "SAME", {2, 1}, {1, 2}) ^ 2):sum()
  end, {4, 6})
  check("top_k values", function(x) return (hl.lax.top_k(x, 3) * hl.array({3, 2, 1}, "float64")):sum() end, {4, 6})
  it("vmap of grad of cummax equals per-row grads", function()
    local xs = hl.random.normal(hl.random.key(8), {3, 7}, "float64")
    local f = function(v) return (hl.cummax(v) * hl.arange(7):astype("float64")):sum() end
    local batched = hl.vmap(hl.grad(f))(xs)
    for i = 1, 3 do diff_check.close(batched[i], diff_check.flat(hl.grad(f)(xs[i])), 1e-12, "row " .. i) end
  end)
  it("vmap of associative_scan over a second axis equals the scan of each slice", function()
    local xs = hl.random.normal(hl.random.key(9), {5, 3}, "float64")
    local got = hl.vmap(function(v) return hl.lax.associative_scan(hl.add, v) end, 2, 2)(xs)
    diff_check.close(got, diff_check.flat(hl.cumsum(xs, 1)), 1e-12, "vmapped scan")
  end)
end)

describe("hl.checkpoint", function()
  local calls
  local function block(x) calls = calls + 1; return hl.tanh(hl.sin(x) * 2 + x ^ 2) end
  local f = function(x) return block(x):sum() end
  local cf = hl.checkpoint(function(x) return block(x) end)
  local g = function(x) return cf(x):sum() end
  local x = hl.array({0.1, -0.4, 0.7, 1.3}, "float64")

  it("runs the function again in the backward pass, with equal gradients", function()
    calls = 0
    local want = hl.grad(f)(x)
    assert.are.equal(1, calls)
    calls = 0
    local got = hl.grad(g)(x)
    assert.are.equal(2, calls)   -- once forward, once more when the backward pass reaches it
    diff_check.close(got, diff_check.flat(want), 1e-14, "grad")
    diff_check.close(got, diff_check.numeric(g, x), 1e-6, "grad vs differences")
  end)
  it("keeps nothing of the function on the tape", function()
    -- whether each run of the function computes values that the tape records
    local recorded = {}
    local body = function(v) local h = hl.sin(v) * 3; recorded[#recorded + 1] = hl.core.trace_of(h) ~= nil; return hl.exp(h) end
    local cb = hl.checkpoint(body)
    hl.grad(function(v) return cb(v):sum() end)(x)
    -- the forward run on bare data, the backward pass's run recorded for its own derivative
    assert.are.same({false, true}, recorded)
    recorded = {}
    hl.grad(function(v) return body(v):sum() end)(x)
    assert.are.same({true}, recorded)
  end)
  it("a chain of checkpointed blocks differentiates as the plain chain", function()
    calls = 0
    local chain = function(v) for _ = 1, 3 do v = cf(v) end return v:sum() end
    local plain = function(v) for _ = 1, 3 do v = block(v) end return v:sum() end
    local got = hl.grad(chain)(x)
    assert.are.equal(6, calls)
    calls = 0
    diff_check.close(got, diff_check.flat(hl.grad(plain)(x)), 1e-14, "chain")
  end)
  it("works under jit, where the backward pass traces the function again", function()
    calls = 0
    local got = hl.jit(hl.grad(g))(hl.array({0.3, 0.2, -0.1, 0.5}, "float64"))
    assert.are.equal(2, calls)
    diff_check.close(got, diff_check.flat(hl.grad(f)(hl.array({0.3, 0.2, -0.1, 0.5}, "float64"))), 1e-12, "jit grad")
  end)
  it("second derivatives, hessian and jvp equal the plain function's", function()
    calls = 0
    local h1 = hl.grad(function(v) return hl.grad(g)(v):sum() end)(x)
    local h2 = hl.grad(function(v) return hl.grad(f)(v):sum() end)(x)
    diff_check.close(h1, diff_check.flat(h2), 1e-12, "grad of grad")
    diff_check.close(hl.hessian(g)(x), diff_check.flat(hl.hessian(f)(x)), 1e-12, "hessian")
    local t = hl.array({1, 0.5, -1, 2}, "float64")
    local _, t1 = hl.jvp(g, {x}, {t})
    local _, t2 = hl.jvp(f, {x}, {t})
    diff_check.close(t1, diff_check.flat(t2), 1e-12, "jvp")
  end)
  it("vmap of grad and several arguments, pytrees and numbers", function()
    local cw = hl.checkpoint(function(p, v, s) return hl.tanh(p.w * v + p.b) * s end)
    local loss = function(p, v) return cw(p, v, 2):sum() end
    local ref = function(p, v) return (hl.tanh(p.w * v + p.b) * 2):sum() end
    local p = {w = hl.array({0.5, -1, 2}, "float64"), b = hl.array(0.3, "float64")}
    local v = hl.array({1, 2, 3}, "float64")
    local g1, g2 = hl.grad(loss, {1, 2})(p, v), hl.grad(ref, {1, 2})(p, v)
    diff_check.close(g1[1].w, diff_check.flat(g2[1].w), 1e-12, "w")
    diff_check.close(g1[1].b, diff_check.flat(g2[1].b), 1e-12, "b")
    diff_check.close(g1[2], diff_check.flat(g2[2]), 1e-12, "v")
    local vs = hl.random.normal(hl.random.key(3), {4, 3}, "float64")
    local bg = hl.vmap(hl.grad(function(u) return loss(p, u) end))(vs)
    for i = 1, 4 do diff_check.close(bg[i], diff_check.flat(hl.grad(ref, 2)(p, vs[i])), 1e-12, "row " .. i) end
  end)
  it("keeps several results: a checkpointed scan body, eager and in jit", function()
    local body = function(c, v) local h = hl.tanh(c * v + 0.1); return h, h * 2 end
    local loss = function(b) return function(w)
      local c, ys = hl.scan(b, w, hl.array({0.5, 1.0, 1.5}, "float64"))
      return ys:sum() + c
    end end
    local w = hl.array(0.3, "float64")
    local want = hl.grad(loss(body))(w):item()
    local cb = hl.checkpoint(body)
    local c1, c2 = cb(w, w)
    assert.are.equal(body(w, w):item(), c1:item())
    assert.are.equal(select(2, body(w, w)):item(), c2:item())
    assert.is_true(math.abs(hl.grad(loss(cb))(w):item() - want) < 1e-14)
    assert.is_true(math.abs(hl.jit(hl.grad(loss(cb)))(w):item() - want) < 1e-12)
    local num = diff_check.numeric(loss(body), w)[1]
    assert.is_true(math.abs(want - num) < 1e-6)
  end)
  it("passes strings, booleans and functions through to f", function()
    local cs = hl.checkpoint(function(mode, v, n, act) return act(mode == "double" and v * 2 or v) * n end)
    local loss = function(v) return cs("double", v, 3, hl.sin):sum() end
    local want = hl.cos(x * 2) * 6
    diff_check.close(hl.grad(loss)(x), diff_check.flat(want), 1e-14, "grad")
    diff_check.close(hl.jit(hl.grad(loss))(x), diff_check.flat(want), 1e-12, "jit grad")
    local _, t = hl.jvp(function(v) return cs("double", v, 3, hl.sin) end, {x}, {hl.ones(4, "float64")})
    diff_check.close(t, diff_check.flat(want), 1e-14, "jvp")
    local ok, e = pcall(hl.grad(function(v) return hl.checkpoint(function(o) return o.v end)({v = v, name = "a"}):sum() end), x)
    assert.is_false(ok)
    assert.matches("halua: checkpoint: argument 1 mixes arrays with other values (1 of them)", e, 1, true)
  end)
  it("is the function itself outside differentiation, and has the JAX names", function()
    calls = 0
    diff_check.close(cf(x), diff_check.flat(block(x)), 0, "value")
    assert.are.equal(2, calls)
    assert.are.equal(hl.checkpoint, hl.remat)
    assert.are.equal(hl.checkpoint, hl.lax.checkpoint)
  end)
  it("with no differentiated argument it is f itself, closures included", function()
    local got = hl.grad(function(v) local c = hl.checkpoint(function(u) return u * hl.sin(v) end); return c(hl.ones(4, "float64")):sum() end)(x)
    diff_check.close(got, diff_check.flat(hl.cos(x)), 1e-14, "closure grad")
  end)
  it("says what to do about a closure over a differentiated value, and about options", function()
    local ok, err = pcall(hl.grad(function(v) local c = hl.checkpoint(function(u) return u * v end); return c(v + 1):sum() end), x)
    assert.is_false(ok)
    assert.matches("halua: checkpoint: the function uses a value being differentiated that it did not get as an argument", err, 1, true)
    assert.matches("pass that value as an argument", err, 1, true)
    -- inside jit too, where the values f reads are nodes of the trace
    ok, err = pcall(hl.jit(hl.grad(function(v) local c = hl.checkpoint(function(u) return u * hl.sin(v) end); return c(v + 1):sum() end)), x)
    assert.is_false(ok)
    assert.matches("halua: checkpoint: the function uses a value being differentiated", err, 1, true)
    -- a jit argument that is not differentiated, and stop_gradient of a closure, are fine
    local jg = hl.jit(function(v, w)
      return hl.grad(function(u) return hl.checkpoint(function(z) return z * w + hl.stop_gradient(u) end)(u):sum() end)(v)
    end)(x, x * 3)
    diff_check.close(jg, diff_check.flat(x * 3), 1e-14, "closure over a jit argument")
    ok, err = pcall(hl.checkpoint, f, {policy = 1})
    assert.matches("halua: checkpoint: unknown option 'policy'", err, 1, true)
    ok, err = pcall(hl.checkpoint, 3)
    assert.matches("halua: checkpoint: expected a function, got number", err, 1, true)
  end)
end)

describe("lax aliases", function()
  it("are the control-flow functions themselves", function()
    for _, n in ipairs {"cond", "switch", "fori_loop", "while_loop", "scan", "stop_gradient"} do
      assert.are.equal(hl[n], hl.lax[n], n)
    end
    assert.are.equal(hl.lax.top_k, hl.top_k)
    assert.are.equal(hl.lax.associative_scan, hl.associative_scan)
    assert.are.equal(hl.lax.cummin, hl.cummin)
    assert.are.equal(11, hl.lax.switch(2, {function(v) return v end, function(v) return v + 10 end}, hl.array(1)):item())
  end)
end)

describe("lax errors", function()
  local function err(f, ...)
    local ok, e = pcall(f, ...)
    assert.is_false(ok)
    return e
  end
  local x = hl.ones({3, 4})
  it("name the function, the shapes and what to do", function()
    assert.matches("halua: lax.associative_scan: unknown option 'axes' (the options are reverse, axis)",
                   err(hl.lax.associative_scan, hl.add, x, {axes = 1}), 1, true)
    assert.matches("halua: lax.associative_scan: axis 3 is out of range for 2 dimensions",
                   err(hl.lax.associative_scan, hl.add, x, {axis = 3}), 1, true)
    assert.matches("leaf 2 has 5 elements along the scanned axis, leaf 1 has 3",
                   err(hl.lax.associative_scan, function(a, b) return a end, {x, hl.ones({5})}), 1, true)
    assert.matches("fn must return arrays of its arguments' shapes",
                   err(hl.lax.associative_scan, function(a, b) return (a + b):sum() end, x), 1, true)
    assert.matches("fn must be a function of two trees", err(hl.lax.associative_scan, 3, x), 1, true)
    assert.matches("halua: cummax: a 0-d array has no axis", err(hl.cummax, hl.array(1)), 1, true)
    assert.matches("halua: cummin: axis -3 is out of range", err(hl.cummin, x, -3), 1, true)
    assert.matches("halua: lax.reduce_window: op must be \"sum\", \"max\", \"min\" or a function of two arrays, got \"mean\"",
                   err(hl.lax.reduce_window, x, 0, "mean", {2, 2}), 1, true)
    assert.matches("window_dims needs one entry per axis of the operand (2), got 1 entries",
                   err(hl.lax.reduce_window, x, 0, "sum", {2}), 1, true)
    assert.matches("the window (4, dilated to 4) is larger than axis 1 of the padded operand (3)",
                   err(hl.lax.reduce_window, x, 0, "sum", {4, 1}), 1, true)
    assert.matches("padding must be \"VALID\", \"SAME\" or a table of {lo, hi} pairs, got \"FULL\"",
                   err(hl.lax.reduce_window, x, 0, "sum", {2, 2}, nil, "FULL"), 1, true)
    assert.matches("base_dilation entry 2 must be an integer >= 1, got 0", err(hl.lax.reduce_window, x, 0, "sum", {2, 2}, nil, nil, {2, 0}), 1, true)
    assert.matches("a function op other than hl.add, hl.maximum or hl.minimum needs an init value", err(hl.lax.reduce_window, x, nil, function(a, b) return a * b end, {2, 2}), 1, true)
    assert.matches("strides entry 2 must be an integer >= 1, got 0", err(hl.lax.reduce_window, x, 0, "sum", {2, 2}, {1, 0}), 1, true)
    assert.matches("halua: lax.top_k: k must be an integer in 0..4 (the last axis of float32[3,4]), got 5", err(hl.lax.top_k, x, 5), 1, true)
    assert.matches("halua: lax.top_k: a 0-d array has no last axis", err(hl.lax.top_k, hl.array(2), 1), 1, true)
  end)
end)
describe("hl.lax aliases", function()
  it("dynamic_slice and dynamic_update_slice are hl's, under JAX's lax names too", function()
    assert.are.equal(hl.dynamic_slice, hl.lax.dynamic_slice)
    assert.are.equal(hl.dynamic_update_slice, hl.lax.dynamic_update_slice)
    local x = hl.arange(12):reshape({3, 4})
    assert.are.same({{6, 7}, {10, 11}}, hl.lax.dynamic_slice(x, {2, 3}, {2, 2}):totable())
  end)
end)
