-- hl.vmap against explicit loops (f on each example, results stacked) for every primitive, with
-- in_axes/out_axes, pytrees, nesting, and composition with jit and grad both ways.
local hl = require "halua"

math.randomseed(71)

local function rand(shape, dtype)
  local n = 1
  for _, e in ipairs(shape) do n = n * e end
  local v = {}
  for i = 1, n do v[i] = math.random() * 4 - 2 end
  return hl.reshape(hl.array(v, dtype or "float64"), shape)
end

local function max_diff(a, b)
  assert.are.same(a.shape, b.shape)
  assert.are.equal(a.dtype, b.dtype)
  if a.size == 0 then return 0 end
  if a.dtype == "bool" then return hl.sum(hl.ne(a, b)):item() end
  local d = hl.abs(a:astype("float64") - b:astype("float64"))
  d = hl.where(hl.logical_and(hl.isnan(a:astype("float64")), hl.isnan(b:astype("float64"))), 0, d)
  return hl.max(d):item()
end

-- vmap(f)(args) against stacking f over the examples of the mapped arguments (along axis 1)
local function check(f, args, in_axes, tol)
  local got = {hl.vmap(f, in_axes)(unpack(args))}
  local function axis_for(i)
    if type(in_axes) == "table" then return in_axes[i] end
    if in_axes == nil then return 1 end
    return in_axes
  end
  local n
  for i, a in ipairs(args) do
    local ax = axis_for(i)
    if ax then n = a.shape[ax] end
  end
  local per = {}
  for b = 1, n do
    local call = {}
    for i, a in ipairs(args) do
      local ax = axis_for(i)
      if ax then
        local key = {}
        for d = 1, a.ndim do key[d] = d == ax and b or {} end
        call[i] = a[key]
      else
        call[i] = a
      end
    end
    per[b] = {f(unpack(call))}
  end
  for r = 1, #got do
    local rows = {}
    for b = 1, n do rows[b] = per[b][r] end
    local want = hl.stack(rows, 1)
    local d = max_diff(got[r], want)
    assert(d <= (tol or 1e-12), "result " .. r .. " differs from the loop by " .. d)
  end
  -- and the same under jit
  local jgot = {hl.jit(hl.vmap(f, in_axes))(unpack(args))}
  for r = 1, #got do assert(max_diff(jgot[r], got[r]) <= (tol or 1e-12), "jit result " .. r) end
end

describe("batching rules", function()
  it("every primitive has one, beside its differentiation rule", function()
    for _, name in ipairs(hl.core.prim_names()) do
      assert.is_function(hl.rules[name] and hl.rules[name].batch, name)
    end
  end)
end)

describe("vmap against explicit loops", function()
  local x, y = rand({4, 3, 5}), rand({4, 3, 5})
  it("every unary primitive", function()
    check(function(a)
      local p = hl.abs(a) + 0.5
      return -a, hl.abs(a), hl.sign(a), hl.square(a), hl.floor(a), hl.ceil(a), hl.round(a), hl.reciprocal(p),
             hl.exp(a), hl.expm1(a), hl.log(p), hl.log1p(p), hl.sqrt(p), hl.rsqrt(p), hl.sin(a), hl.cos(a), hl.tan(a),
             hl.asin(a / 3), hl.acos(a / 3), hl.atan(a), hl.sinh(a), hl.cosh(a), hl.tanh(a), hl.erf(a), hl.isnan(a),
             hl.isinf(a), hl.isfinite(a), hl.logical_not(hl.gt(a, 0))
    end, {x})
  end)
  it("every binary primitive, where and casts, with an unmapped operand", function()
    local f = function(a, b)
      local pb = hl.abs(b) + 0.5
      return a + b, a - b, a * b, a / pb, hl.pow(hl.abs(a), b), hl.mod(a, pb), hl.floor_divide(a, pb), hl.maximum(a, b),
             hl.minimum(a, b), hl.atan2(a, b), hl.eq(a, b), hl.ne(a, b), hl.lt(a, b), hl.le(a, b), hl.gt(a, b), hl.ge(a, b),
             hl.logical_and(hl.gt(a, 0), hl.gt(b, 0)), hl.logical_or(hl.gt(a, 0), hl.gt(b, 0)),
             hl.logical_xor(hl.gt(a, 0), hl.gt(b, 0)), hl.where(hl.gt(a, b), a, b), a:astype("int32"), a:astype("float32")
    end
    check(f, {x, y})
    check(f, {x, y[1]}, {1, false})
    check(function(a, b) return a * b + 1 end, {x, y}, {3, 3})
  end)
  it("bitwise primitives and shifts", function()
    local i = hl.array({{1, 2, 3}, {40, 50, 60}}, "int64")
    check(function(a) return hl.core.prims.bitwise_and(a, 6), hl.core.prims.bitwise_or(a, 1), hl.core.prims.bitwise_xor(a, 5),
                             hl.core.prims.left_shift(a, 2), hl.core.prims.right_shift(a, 1) end, {i})
  end)
  it("every reduction, over one axis, several and all", function()
    check(function(a)
      return hl.sum(a), hl.sum(a, 2), hl.prod(a, {1, 2}), hl.max(a, 1), hl.min(a), hl.argmax(a, 2), hl.argmin(a, 1),
             hl.mean(a, 2, true), hl.logsumexp(a, 1), hl.cumsum(a, 2)
    end, {x})
  end)
  it("matmul with either operand mapped, and both", function()
    local a, b = rand({4, 3, 5}), rand({4, 5, 2})
    check(hl.matmul, {a, b})
    check(hl.matmul, {a, b[1]}, {1, false})
    check(hl.matmul, {a[1], b}, {false, 1})
    check(function(p, q) return hl.dot(p, q) end, {rand({4, 5}), rand({4, 5})})
  end)
  it("shape primitives: reshape, transpose, broadcast_to, slices, concatenate", function()
    check(function(a)
      return hl.reshape(a, {15}), a.T, hl.broadcast_to(a[1], {2, 3, 5}), a[{{2, 3}, {5, 1, -2}}], a[2],
             hl.concatenate({a, a * 2}, 2), hl.expand_dims(a, 1), hl.flip(a, 1), hl.pad(a, 1), hl.stack({a, a}, 3)
    end, {x})
    check(function(a, b) return hl.concatenate({a, b}, 1) end, {x, y[1]}, {1, false})
  end)
  it("constants and iotas inside the function (arange, eye, full)", function()
    check(function(a) return a + hl.arange(5), hl.matmul(a, hl.eye(5)) * hl.full({5}, 2.0, "float64") end, {x})
  end)
  it("gather and scatter_add: take with mapped or unmapped indices, and its gradient", function()
    local idx = hl.array({{1, 3}, {3, 3}, {2, 1}, {3, 2}}, "int32")
    check(function(a, i) return hl.take(a, i, 1), hl.take(a, i, 2) end, {x, idx})
    check(function(a, i) return hl.take(a, i, 2) end, {x, idx[1]}, {1, false})
    check(function(a, i) return hl.take(a, i, 1) end, {x[1], idx}, {false, 1})
    check(function(a, i) return hl.take_along_axis(a, hl.reshape(i, {2, 1}), 1) end, {x, idx})
    check(function(a, i) return hl.grad(function(t) return hl.sum(hl.take(t, i, 2) ^ 2) end)(a) end, {x, idx})
  end)
  it("control flow: cond, fori_loop, scan (traced step by step)", function()
    check(function(a)
      local c = hl.cond(hl.gt(hl.sum(a), 0), function(t) return t * 2 end, function(t) return -t end, a)
      local l = hl.fori_loop(1, 3, function(i, t) return t * 0.5 + i end, a)
      local s, ys = hl.scan(function(carry, row) return carry + row, carry * row end, a[1], a)
      return c, l, s, ys
    end, {x})
  end)
  it("nn functions", function()
    check(function(a) return hl.nn.softmax(a, 2), hl.nn.relu(a), hl.nn.gelu(a), hl.nn.cross_entropy(a, hl.array({1, 5, 2}, "int32")) end, {x})
    local imgs, w = rand({2, 3, 1, 5, 5}), rand({2, 1, 3, 3})
    check(function(im) return hl.nn.max_pool2d(hl.nn.conv2d(im, w, {padding = 1}), 2) end, {imgs})
  end)
end)

describe("vmap: axes, pytrees, nesting, composition", function()
  local x = rand({3, 4})
  it("in_axes and out_axes: numbers, negatives, per argument, false", function()
    local f = function(a, b) return a * b end
    local got = hl.vmap(f, {2, false}, 2)(x, rand({3}))
    assert.are.same({3, 4}, got.shape)
    local by_col = hl.vmap(function(c) return c * 2 end, -1, -1)(x)
    assert.are.equal(0, max_diff(by_col, x * 2))
    assert.are.same({4, 3}, hl.vmap(function(c) return c end, 2)(x).shape)
  end)
  it("pytrees in and out; unmapped results repeat along the batch", function()
    local out = hl.vmap(function(p) return {s = p.a + p.b, n = 7} end)({a = x, b = x * 2})
    assert.are.equal(0, max_diff(out.s, x * 3))
    assert.are.same({3}, out.n.shape)
    assert.are.equal(7, out.n[2]:item())
  end)
  it("vmap of vmap is the elementwise function", function()
    local got = hl.vmap(hl.vmap(function(v) return hl.sin(v) * v end))(x)
    assert.are.equal(0, max_diff(got, hl.sin(x) * x))
  end)
  it("per-example gradients: vmap(grad(f)) against a loop of grads", function()
    local w = rand({4})
    local loss = function(wt, xi) return hl.sum(hl.tanh(xi * wt)) end
    local per = hl.vmap(hl.grad(loss), {false, 1})(w, x)
    for i = 1, 3 do assert(max_diff(per[i], hl.grad(loss)(w, x[i])) < 1e-14) end
    local jper = hl.jit(hl.vmap(hl.grad(loss), {false, 1}))(w, x)
    assert(max_diff(jper, per) < 1e-14)
  end)
  it("grad(vmap(f)) against the gradient of the loop's sum", function()
    local w = rand({4})
    local f = function(wt, xi) return hl.sum(hl.sin(xi * wt)) end
    local g = hl.grad(function(wt) return hl.sum(hl.vmap(f, {false, 1})(wt, x)) end)(w)
    local want = hl.grad(function(wt)
      local s = f(wt, x[1])
      for i = 2, 3 do s = s + f(wt, x[i]) end
      return s
    end)(w)
    assert(max_diff(g, want) < 1e-14)
    local jg = hl.jit(hl.grad(function(wt) return hl.sum(hl.vmap(f, {false, 1})(wt, x)) end))(w)
    assert(max_diff(jg, want) < 1e-13)
  end)
  it("grad through a vmapped function that closes over the differentiated value", function()
    local w = rand({4})
    local loss = function(wt) return hl.sum(hl.vmap(function(xi) return hl.sin(xi * wt) end)(x)) end
    local want = hl.grad(function(wt) return hl.sum(hl.sin(x * wt)) end)(w)
    assert(max_diff(hl.grad(loss)(w), want) < 1e-14)
    assert(max_diff(hl.jit(hl.grad(loss))(w), want) < 1e-13)
  end)
  it("closures over values of an enclosing jit trace", function()
    local f = hl.jit(function(a, s) return hl.vmap(function(row) return row * s + hl.sum(a) end)(a) end)
    local got = f(x, hl.array(3, "float64"))
    assert(max_diff(got, x * 3 + hl.sum(x)) < 1e-14)
  end)
  it("under jit the batch is one pipeline: the IR has no per-example copies", function()
    local f = function(row) return hl.tanh(row) * 2 end
    local ir = hl.jit(hl.vmap(f)):lower(rand({100, 4})):ir()
    local count = select(2, ir:gsub("tanh", ""))
    assert.are.equal(1, count)
  end)
  it("jacobians are one batched pass: a jitted Hessian's program does not grow with the input", function()
    local f = function(v) return hl.sum(hl.sin(v) * v) * hl.sum(hl.exp(v)) end
    local function lines(n) return select(2, hl.jit(hl.hessian(f)):lower(rand({n})):ir():gsub("\n", "")) end
    assert.are.equal(lines(5), lines(60))
    local v = rand({6})
    assert(max_diff(hl.jit(hl.hessian(f))(v), hl.hessian(f)(v)) < 1e-12)
  end)
  it("random keys map: each key's bits as if drawn alone", function()
    local keys = hl.random.split(hl.random.key(5), 4)
    local got = hl.vmap(function(k) return hl.random.uniform(k, {3}) end)(keys)
    for i = 1, 4 do assert.are.equal(0, max_diff(got[i], hl.random.uniform(keys[i], {3}))) end
  end)
end)

describe("vmap errors", function()
  local function fails(words, f, ...)
    local ok, err = pcall(f, ...)
    assert.is_false(ok)
    for _, w in ipairs(words) do assert(tostring(err):find(w, 1, true), "error '" .. tostring(err) .. "' lacks '" .. w .. "'") end
  end
  local x = hl.ones({3, 4})
  it("name the argument and the axes", function()
    fails({"halua: vmap:", "expected a function"}, hl.vmap, 3)
    fails({"halua: vmap:", "argument 2 has 5 examples along axis 1, argument 1 has 3"}, hl.vmap(function(a, b) return a end), x, hl.ones({5}))
    fails({"halua: vmap:", "in_axes 3 is out of range for argument 1 of shape [3,4]"}, hl.vmap(function(a) return a end, 3), x)
    fails({"halua: vmap:", "in_axes lists 1 axes but the function got 2"}, hl.vmap(function(a) return a end, {1}), x, x)
    fails({"halua: vmap:", "no argument is mapped"}, hl.vmap(function(a) return a end, false), x)
    fails({"halua: vmap:", "argument 1 is mapped but holds a number"}, hl.vmap(function(a) return a end), 3)
    fails({"halua: vmap:", "non-zero integer axis"}, hl.vmap, function(a) return a end, 0)
    fails({"halua: vmap:", "out_axes 5 is out of range"}, hl.vmap(function(a) return a end, 1, 5), x)
    fails({"halua: while_loop:", "which hl.vmap batches only inside hl.jit"}, hl.vmap(function(a)
      return hl.while_loop(function(c) return hl.lt(hl.sum(c), 10) end, function(c) return c + 1 end, a)
    end), x)
    fails({"halua: reshape:"}, hl.vmap(function(a) return hl.reshape(a, {5}) end), x)
  end)
end)
