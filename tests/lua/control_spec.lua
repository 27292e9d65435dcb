-- Structured control flow: cond, switch, while_loop, fori_loop and scan against plain Lua
-- control flow, eagerly and under jit, carrying pytrees; gradients through them against central
-- differences; every error's words.
local hl = require "halua"
local F64 = "float64"

local function close(a, b, tol)
  local ta = type(a) == "table" and a or hl.flatten(a):astype(F64):totable()
  local tb = type(b) == "table" and b or hl.flatten(b):astype(F64):totable()
  assert.are.equal(#tb, #ta)
  for i = 1, #ta do
    assert.is_true(math.abs(ta[i] - tb[i]) <= (tol or 1e-12) * math.max(1, math.abs(tb[i])),
                   string.format("element %d is %.17g, expected %.17g", i, ta[i], tb[i]))
  end
end
local err_of = require("support.errors").err_of
local has = require("support.errors").has

-- The derivative along `seed` of `steps` steps c -> 0.9999 c + 1e-4 sin(c) from x, by a Lua loop:
-- d/dc of a step is 0.9999 + 1e-4 cos(c), so the derivative is the product over the steps.
local function slow_step_derivative(x, seed, steps)
  local c, g = x:totable(), seed
  for _ = 1, steps do
    for k = 1, #c do
      g[k] = g[k] * (0.9999 + 1e-4 * math.cos(c[k]))
      c[k] = c[k] * 0.9999 + math.sin(c[k]) * 1e-4
    end
  end
  return g
end

-- each behaviour eagerly (T = identity) and under jit
local function both(name, body)
  it(name, function() body(function(f) return f end) end)
  it(name .. " [jit]", function() body(hl.jit) end)
end

describe("cond and switch", function()
  local x = hl.array({1.5, -2, 3}, F64)
  both("cond takes the branch the predicate chooses, passing the operands", function(T)
    local f = T(function(p, a, b) return hl.cond(p, function(u, v) return {u * v, u} end, function(u, v) return {u - v, v} end, a, b) end)
    local r = f(hl.array(true), x, x + 1)
    close(r[1], {1.5 * 2.5, -2 * -1, 3 * 4})
    close(r[2], x)
    r = f(hl.array(false), x, x + 1)
    close(r[1], {-1, -1, -1})
    close(r[2], x + 1)
  end)
  both("cond on a number predicate (nonzero is true)", function(T)
    local f = T(function(p, a) return hl.cond(hl.gt(p, 0), function(u) return hl.sin(u) end, function(u) return hl.cos(u) end, a) end)
    close(f(hl.array(2, F64), x), hl.sin(x))
    close(f(hl.array(-2, F64), x), hl.cos(x))
  end)
  both("switch picks branch i (1-based) and clamps out-of-range indices", function(T)
    local fs = {function(u) return u end, function(u) return u * 10 end, function(u) return -u end}
    local f = T(function(i, a) return hl.switch(i, fs, a) end)
    for i, want in pairs {[1] = {1.5, -2, 3}, [2] = {15, -20, 30}, [3] = {-1.5, 2, -3}, [0] = {1.5, -2, 3}, [7] = {-1.5, 2, -3}} do
      close(f(hl.array(i, "int32"), x), want)
    end
  end)
  it("branch results must agree in structure, shape and dtype", function()
    local traced = hl.jit(function(p) return hl.cond(p, function() return hl.ones(2) end, function() return hl.ones(3) end) end)
    has(err_of(traced, hl.array(true)), "halua: cond: the false branch's result leaf (the value itself) is float32[3], expected float32[2]")
    local tree = hl.jit(function(p) return hl.cond(p, function() return {a = hl.ones(2)} end, function() return {a = hl.ones(2), b = hl.ones(2)} end) end)
    has(err_of(tree, hl.array(true)), "halua: cond: the false branch's result is {a = *, b = *} (a table of 2 leaves), but the true branch's result is {a = *} (a table of 1 leaf): they must have the same structure")
    local sw = hl.jit(function(i) return hl.switch(i, {function() return {w = hl.ones(2)} end, function() return {w = hl.ones(2, "int32")} end}) end)
    has(err_of(sw, hl.array(1, "int32")), "halua: switch: branch 2's result leaf .w is int32[2], expected float32[2]")
  end)
  it("arguments are checked", function()
    has(err_of(hl.cond, hl.array({true, false}), function() end, function() end), "halua: cond: the predicate must be a 0-d array, got bool[2]")
    has(err_of(hl.cond, "yes", function() end, function() end), "halua: cond: the predicate is a string, expected a boolean, a number or a 0-d array")
    has(err_of(hl.cond, true, 3, function() end), "halua: cond: true_fn must be a function, got number")
    has(err_of(hl.switch, 1, {}), "halua: switch: branches must be a non-empty list of functions")
    has(err_of(hl.switch, 1.5, {function() end}), "halua: switch: the index must be an integer, got 1.5")
    has(err_of(hl.switch, hl.array(1.0), {function() end}), "halua: switch: the index must be an integer, got float32[]")
  end)
end)

describe("loops", function()
  both("fori_loop runs lo..hi inclusive with i as an int32 0-d array, like a Lua for loop", function(T)
    local f = T(function(a) return hl.fori_loop(2, 6, function(i, c) return {s = c.s * 2 + i, n = c.n + 1} end, {s = a, n = hl.array(0, "int32")}) end)
    local r = f(hl.array({1, 2}, F64))
    local want = {1, 2}
    for i = 2, 6 do for k = 1, 2 do want[k] = want[k] * 2 + i end end
    close(r.s, want)
    assert.are.equal(5, r.n:item())
    assert.are.equal("int32", r.n.dtype)
  end)
  both("fori_loop with an empty range returns the carry", function(T)
    close(T(function(a) return hl.fori_loop(3, 2, function(_, c) return c * 0 end, a) end)(hl.array({4, 5}, F64)), {4, 5})
  end)
  both("while_loop runs while cond_fn is true", function(T)
    local f = T(function(a) return hl.while_loop(function(c) return hl.lt(hl.sum(c.x), 100) end, function(c) return {x = c.x * 3, n = c.n + 1} end, {x = a, n = hl.array(0, "int32")}) end)
    local r = f(hl.array({1, 2}, F64))
    close(r.x, {81, 162})
    assert.are.equal(4, r.n:item())
    r = f(hl.array({200, 0}, F64))   -- no step at all
    close(r.x, {200, 0})
    assert.are.equal(0, r.n:item())
  end)
  it("while_loop runs while cond_fn is true, eagerly", function()
    local r = hl.while_loop(function(c) return hl.lt(c[1], 100) end, function(c) return {c[1] * 3, c[2] + 1} end, {hl.array(1, F64), 0})
    local v, n = 1, 0
    while v < 100 do v, n = v * 3, n + 1 end
    close(r[1], {v})
    close(r[2], {n})
  end)
  both("scan threads the carry and stacks the outputs along a new first axis", function(T)
    local xs = hl.reshape(hl.arange(12, F64), {4, 3})
    local c, ys = T(function(init, rows) return hl.scan(function(c, r) return c + r, {sum = c, prod = c * r} end, init, rows) end)(hl.zeros(3, F64), xs)
    local acc, sums, prods = {0, 0, 0}, {}, {}
    for i = 0, 3 do
      for k = 1, 3 do
        local v = i * 3 + k - 1
        sums[#sums + 1], prods[#prods + 1] = acc[k], acc[k] * v
        acc[k] = acc[k] + v
      end
    end
    close(c, acc)
    assert.are.same({4, 3}, ys.sum.shape)
    close(ys.sum, sums)
    close(ys.prod, prods)
  end)
  it("carries must keep their structure, shapes and dtypes", function()
    has(err_of(hl.fori_loop, 1, 3, function(_, c) return c:astype(F64) end, hl.ones(3)),
        "halua: fori_loop: body_fn's result leaf (the value itself) is float64[3], expected float32[3]")
    has(err_of(hl.fori_loop, 1, 3, function(_, c) return {c[1], c[2][{{1, 2}}]} end, {hl.ones(3), hl.ones(3)}),
        "halua: fori_loop: body_fn's result leaf [2] is float32[2], expected float32[3]")
    has(err_of(hl.while_loop, function() return true end, function(c) return {c, c} end, hl.ones(2)),
        "halua: while_loop: body_fn's result is {*, *} (a table of 2 leaves), but the initial carry is a single value: they must have the same structure")
    has(err_of(hl.scan, function(c, x) return c, (x[1]:item() > 0 and x or x[{{1, 1}}]) end, hl.ones(1), hl.array({{1, 2}, {-1, 2}})),
        "halua: scan: f's output at step 2 leaf (the value itself) is float32[1], expected float32[2]")
  end)
  it("arguments are checked", function()
    local loop = function(a) return hl.sum(hl.while_loop(function(c) return hl.lt(c[1], 10) end, function(c) return c * a end, a)) end
    has(err_of(hl.jit(hl.grad(loop)), hl.array({2, 3})),
        "halua: while_loop: its number of steps depends on traced values, so reverse-mode autodiff (grad, vjp, jacrev, hessian) cannot go through it; use hl.fori_loop or hl.scan with a fixed number of steps (jvp and jacfwd can, inside hl.jit)")
    has(err_of(hl.jit(hl.hessian(loop)), hl.array({2, 3})), "so reverse-mode autodiff (grad, vjp, jacrev, hessian) cannot go through it")
    local grow = function(a) return hl.while_loop(function(c) return hl.lt(hl.sum(c), 10) end, function(c) return c * 2 end, a) end
    has(err_of(hl.vmap(grow), hl.ones({2, 3})),
        "halua: while_loop: its number of steps depends on traced values, which hl.vmap batches only inside hl.jit (and not inside jvp or jacfwd there); use hl.fori_loop or hl.scan with a fixed number of steps")
    local jvp_of_vmap = function(a, t) return hl.jvp(hl.vmap(grow), {a}, {t}) end
    has(err_of(hl.jit(jvp_of_vmap), hl.ones({2, 3}), hl.ones({2, 3})), "which hl.vmap batches only inside hl.jit (and not inside jvp or jacfwd there)")
    has(err_of(hl.jit(function(n, a) return hl.fori_loop(1, n, function(_, c) return c end, a) end), hl.array(3, "int32"), hl.ones(2)),
        "halua: fori_loop: hi must be known when the function is traced (a number), not a traced array")
    has(err_of(hl.fori_loop, 1, 2.5, function() end, 0), "halua: fori_loop: hi must be an integer, got 2.5")
    has(err_of(hl.fori_loop, 1, 2, function(_, c) return c end, {"x"}), "halua: fori_loop: the initial carry's leaf [1] is a string")
    has(err_of(hl.scan, function(c) return c end, 0, {hl.ones(2), hl.ones(3)}), "halua: scan: xs leaf [2] has 3 rows, but the first leaf has 2")
    has(err_of(hl.scan, function(c) return c end, 0, hl.array(1)), "halua: scan: xs leaf (the value itself) is 0-d; scan runs along the first axis")
    has(err_of(hl.scan, function(c) return c end, 0, nil), "halua: scan: xs must hold at least one array to scan over")
  end)
end)

describe("compiled loops inside jit", function()
  it("take operands made by other extern stages (a matmul) and feed them (a matmul of the result)", function()
    local a = hl.reshape(hl.arange(9), {3, 3}):astype("float32") / 10
    local f = hl.jit(function(m)
      local r = hl.fori_loop(1, 3, function(_, c) return c * 2 + 1 end, hl.matmul(m, m))
      return hl.matmul(r, m)
    end)
    local c = hl.matmul(a, a)
    for _ = 1, 3 do c = c * 2 + 1 end
    local want = hl.matmul(c, a)
    assert.is_true(hl.max(hl.abs(f(a) - want)):item() < 1e-4)
  end)
  it("compile the body once: the traced program does not grow with the number of steps", function()
    local function sim(steps)
      return function(x, v) return hl.fori_loop(1, steps, function(_, s) return {x = s.x + 0.01 * s.v, v = s.v - 0.01 * s.x} end, {x = x, v = v}) end
    end
    local x, v = hl.array({1, 0.5}, F64), hl.array({0, 0.1}, F64)
    local small, big = tostring(hl.trace(sim(10), x, v)), tostring(hl.trace(sim(10000), x, v))
    local _, lines_small = small:gsub("\n", "")
    local _, lines_big = big:gsub("\n", "")
    assert.are.equal(lines_small, lines_big)
    assert.truthy(big:find("loop", 1, true))
    -- and the result is the step-by-step one
    local r = hl.jit(sim(1000))(x, v)
    local xs, vs = {1, 0.5}, {0, 0.1}
    for _ = 1, 1000 do for k = 1, 2 do xs[k], vs[k] = xs[k] + 0.01 * vs[k], vs[k] - 0.01 * xs[k] end end
    close(r.x, xs, 1e-12)
    close(r.v, vs, 1e-12)
  end)
  it("bodies use values from outside the loop: traced arguments, values computed from them, constants", function()
    local f = hl.jit(function(a, b)
      local scale = hl.exp(b) * 2          -- computed outside the loop, used inside
      local k = hl.array({1, 2, 3}, F64)   -- a constant
      return hl.fori_loop(1, 3, function(i, c) return c * scale + k * i + a end, a)
    end)
    local a, b = hl.array({0.5, -1, 2}, F64), hl.array(0.1, F64)
    local c, s = a, hl.exp(b) * 2
    for i = 1, 3 do c = c * s + hl.array({1, 2, 3}, F64) * i + a end
    close(f(a, b), c, 1e-12)
  end)
  it("give consumers that read part of a result the right part", function()
    local f = hl.jit(function(a)
      local r = hl.fori_loop(1, 3, function(i, c) return c * 2 + i end, a)
      return r[{{2, 3}}] * 10, r[{{}, {3, 3}}]
    end)
    local a = hl.reshape(hl.arange(12, F64), {4, 3})
    local c = a
    for i = 1, 3 do c = c * 2 + i end
    local p, q = f(a)
    close(p, c[{{2, 3}}] * 10)
    close(q, c[{{}, {3, 3}}])
  end)
  it("nest loops, carry integers and booleans, and scan with several outputs", function()
    local f = hl.jit(function(a)
      local outer = hl.fori_loop(1, 3, function(i, c)
        local inner = hl.fori_loop(1, 4, function(j, d) return {d[1] + i * j, hl.logical_not(d[2])} end, {c.sum, c.flag})
        return {sum = inner[1], flag = inner[2], count = c.count + 1}
      end, {sum = a, flag = hl.array(true), count = hl.array(0, "int32")})
      local last, ys = hl.scan(function(c, row) return c + hl.sum(row), {total = c, row2 = row * 2} end, hl.array(0, F64), hl.reshape(a, {3, 1}))
      return outer, last, ys
    end)
    local a = hl.array({1, 2, 3}, F64)
    local outer, last, ys = f(a)
    close(outer.sum, {61, 62, 63})               -- plus the sum over i = 1..3, j = 1..4 of i * j = 60
    assert.are.equal(true, outer.flag:item())    -- flipped 12 times
    assert.are.equal(3, outer.count:item())
    close(last, {6})
    close(ys.total, {0, 1, 3})
    assert.are.same({3, 1}, ys.row2.shape)
    close(ys.row2, {2, 4, 6})
  end)
end)

describe("gradients through control flow", function()
  -- central differences of a scalar function of one float64 vector
  local function numeric_grad(f, x)
    local t, g = x:totable(), {}
    for i = 1, #t do
      local h = 1e-6 * math.max(1, math.abs(t[i]))
      local up, dn = {unpack(t)}, {unpack(t)}
      up[i], dn[i] = t[i] + h, t[i] - h
      g[i] = (f(hl.array(up, F64)):item() - f(hl.array(dn, F64)):item()) / (2 * h)
    end
    return g
  end
  local x = hl.array({0.3, -0.7, 1.1}, F64)
  local cases = {
    {"cond", function(a) return hl.cond(hl.gt(a[1], 0), function(u) return hl.sum(hl.sin(u) * u) end, function(u) return hl.sum(u ^ 3) end, a) end},
    {"switch", function(a) return hl.switch(hl.array(2, "int32"), {function(u) return hl.sum(u) end, function(u) return hl.sum(hl.exp(u) * u) end}, a) end},
    {"fori_loop", function(a) return hl.sum(hl.fori_loop(1, 4, function(i, c) return hl.tanh(c * a + i) end, a)) end},
    {"scan", function(a)
      local c, ys = hl.scan(function(c, r) return c * hl.cos(r), hl.sum(c * r) end, a, hl.reshape(a, {3, 1}) * hl.ones({3, 3}, F64))
      return hl.sum(c) + hl.sum(ys ^ 2)
    end},
  }
  for _, c in ipairs(cases) do
    local name, f = c[1], c[2]
    both(name .. " against central differences", function(T)
      close(T(hl.grad(f))(x), numeric_grad(f, x), 1e-6)
    end)
  end
  it("while_loop differentiates eagerly", function()
    local f = function(a) return hl.while_loop(function(c) return hl.lt(hl.sum(c), 10) end, function(c) return c * a end, a + 1):sum() end
    local y = hl.array({1.5, 1.2, 1.1}, F64)
    close(hl.grad(f)(y), numeric_grad(f, y), 1e-6)
  end)
end)

describe("reverse mode through compiled loops inside jit", function()
  -- under hl.grad inside jit, fori_loop and scan stay compiled loops: the derivative is a
  -- backward loop
  local w = hl.array({0.5, -0.3, 0.8}, F64)
  local x = hl.array({0.2, 0.4, -0.6}, F64)
  local xs = hl.reshape(hl.linspace(-1, 1, 12):astype(F64), {4, 3})
  -- central differences of f with respect to argument k (a float64 array)
  local function numeric(f, args, k)
    local a = args[k]
    local t, g = hl.flatten(a):totable(), {}
    for i = 1, #t do
      local h = 1e-6 * math.max(1, math.abs(t[i]))
      local up, dn = {unpack(t)}, {unpack(t)}
      up[i], dn[i] = t[i] + h, t[i] - h
      local au, ad = {unpack(args)}, {unpack(args)}
      au[k], ad[k] = hl.reshape(hl.array(up, F64), a.shape), hl.reshape(hl.array(dn, F64), a.shape)
      g[i] = (f(unpack(au)):item() - f(unpack(ad)):item()) / (2 * h)
    end
    return g
  end
  local cases = {
    {"fori_loop, the weights used inside the body", function(a, b)
      return hl.sum(hl.fori_loop(1, 6, function(_, c) return hl.sin(c * b) + 0.1 * c end, a) ^ 2)
    end, {x, w}},
    {"fori_loop, the loop index in the body and an integer carry", function(a, b)
      local r = hl.fori_loop(1, 5, function(i, c) return {c[1] * b + i:astype(F64) * 0.01, c[2] + i} end, {a, hl.array(0, "int32")})
      return hl.sum(r[1] ^ 2) * r[2]:astype(F64)
    end, {x, w}},
    {"scan: the carry, the scanned rows and the stacked outputs", function(a, r)
      local c, ys = hl.scan(function(c, row) local n = c * hl.cos(row) + row return n, hl.tanh(n) * row end, a, r)
      return hl.sum(c) + hl.sum(ys ^ 2)
    end, {x, xs}},
    {"values computed outside the loop, and the initial carry used inside the body", function(a, b)
      local scale = hl.exp(b) * 0.5
      return hl.sum(hl.fori_loop(1, 4, function(_, c) return c * scale + a * 0.1 end, a))
    end, {x, w}},
    {"nested loops", function(a, b)
      return hl.sum(hl.fori_loop(1, 3, function(_, c)
        return hl.fori_loop(1, 4, function(_, d) return hl.sin(d * b) + c * 0.1 end, c)
      end, a))
    end, {x, w}},
  }
  for _, case in ipairs(cases) do
    local name, f, args = case[1], case[2], case[3]
    it(name .. ": against central differences and eager, still a compiled loop", function()
      local g = hl.jit(hl.grad(f, {1, 2}))(unpack(args))
      local e = hl.grad(f, {1, 2})(unpack(args))
      for k = 1, 2 do
        close(g[k], numeric(f, args, k), 1e-6)
        close(g[k], e[k], 1e-12)
      end
      local stmt = hl.jit(hl.grad(f, {1, 2})):lower(unpack(args)):stmt()
      assert.truthy(stmt:find("hl_stage_loop", 1, true))
    end)
  end
  it("scan over zero rows: the carry unchanged, empty stacks, gradient one", function()
    local f = function(a)
      local c, ys = hl.scan(function(c, r) return c * r, {c, r:sum()} end, a, hl.zeros({0, 3}, F64))
      assert.are.same({0, 3}, ys[1].shape)
      assert.are.same({0}, ys[2].shape)
      return hl.sum(c) + hl.sum(ys[1])
    end
    close(f(x), {hl.sum(x):item()})
    close(hl.jit(f)(x), {hl.sum(x):item()})
    close(hl.grad(f)(x), {1, 1, 1})
    close(hl.jit(hl.grad(f))(x), {1, 1, 1})
  end)
  it("take second derivatives (grad of grad), and hessian and jacrev agree with eager", function()
    local f = function(a) return hl.sum(hl.fori_loop(1, 4, function(_, c) return hl.sin(c) * a + c * 0.5 end, a)) end
    local gg = function(a) return hl.sum(hl.grad(f)(a) ^ 2) end
    close(hl.jit(hl.grad(gg))(x), numeric(gg, {x}, 1), 1e-6)
    close(hl.jit(hl.hessian(f))(x), hl.hessian(f)(x), 1e-12)
    local loop = function(a) return hl.fori_loop(1, 4, function(_, c) return hl.sin(c) * a end, a) end
    close(hl.jit(hl.jacrev(loop))(x), hl.jacrev(loop)(x), 1e-12)
    local v1, g1 = hl.value_and_grad(f)(x)
    local v2, g2 = hl.jit(hl.value_and_grad(f))(x)
    close(v2, v1, 1e-12)
    close(g2, g1, 1e-12)
  end)
  it("compile once: the gradient's traced program does not grow with the number of steps", function()
    local function loss(steps)
      return function(a) return hl.sum(hl.fori_loop(1, steps, function(_, c) return c * 0.9999 + hl.sin(c) * 1e-4 end, a)) end
    end
    local small = tostring(hl.trace(hl.grad(loss(10)), x))
    local big = tostring(hl.trace(hl.grad(loss(10000)), x))
    local _, lines_small = small:gsub("\n", "")
    local _, lines_big = big:gsub("\n", "")
    assert.are.equal(lines_small, lines_big)
    close(hl.jit(hl.grad(loss(10000)))(x), slow_step_derivative(x, {1, 1, 1}, 10000), 1e-10)
  end)
end)

describe("forward mode through compiled loops inside jit", function()
  -- under hl.jvp and hl.jacfwd inside jit, fori_loop, while_loop and scan stay compiled loops:
  -- the tangents come from a second loop that carries them beside the carries
  local w = hl.array({0.5, -0.3, 0.8}, F64)
  local x = hl.array({0.2, 0.4, -0.6}, F64)
  local u = hl.array({1.0, -0.5, 2.0}, F64)
  local xs = hl.reshape(hl.linspace(-1, 1, 12):astype(F64), {4, 3})
  -- f's derivative along direction d at its first argument, by central differences
  local function directional(f, args, d)
    local h = 1e-6
    local up, dn = {unpack(args)}, {unpack(args)}
    up[1], dn[1] = args[1] + d * h, args[1] - d * h
    return (f(unpack(up)) - f(unpack(dn))) / (2 * h)
  end
  local function loops_in(stmt)
    local _, n = stmt:gsub("hl_stage_loop", "")
    return n
  end
  local cases = {
    {"fori_loop, the weights and the loop index used inside the body", function(a, b)
      return hl.fori_loop(1, 6, function(i, c) return hl.sin(c * b) + 0.1 * c + i:astype(F64) * 0.01 end, a)
    end, {x, w}},
    {"fori_loop with an integer carry beside the float one", function(a, b)
      local r = hl.fori_loop(1, 5, function(i, c) return {c[1] * b + c[2]:astype(F64) * 0.01, c[2] + i} end, {a, hl.array(0, "int32")})
      return r[1] * r[2]:astype(F64)
    end, {x, w}},
    {"scan: the carry, the scanned rows and the stacked outputs", function(a, r)
      local c, ys = hl.scan(function(c, row) local n = c * hl.cos(row) + row return n, {hl.tanh(n) * row, hl.sum(n)} end, a, r)
      return hl.concatenate({c, hl.flatten(ys[1]), ys[2]}, 1)
    end, {x, xs}},
    {"while_loop, whose number of steps depends on the carry", function(a, b)
      local r = hl.while_loop(function(c) return hl.lt(c[2], 7) end,
                              function(c) return {hl.sin(c[1]) * b + c[1], c[2] + 1} end, {a, hl.array(0, "int32")})
      return r[1]
    end, {x, w}},
    {"values computed outside the loop, the initial carry used inside, a capture as a carry", function(a, b)
      local scale = hl.exp(b) * 0.5
      local r = hl.fori_loop(1, 4, function(_, c) return {c[1] * scale + a * 0.1 + c[2], b} end, {a, a})
      return r[1] + r[2]
    end, {x, w}},
    {"nested loops", function(a, b)
      return hl.fori_loop(1, 3, function(_, c)
        return hl.fori_loop(1, 4, function(_, d) return hl.sin(d * b) + c * 0.1 end, c)
      end, a)
    end, {x, w}},
  }
  for _, case in ipairs(cases) do
    local name, f, args = case[1], case[2], case[3]
    it(name .. ": jvp against central differences and eager, still a compiled loop", function()
      local d = hl.ones_like(args[1]) * u[1] + hl.arange(args[1].size):astype(F64):reshape(args[1].shape) * 0.25
      local jvp = function(a, b, t) return hl.jvp(function(p) return f(p, b) end, {a}, {t}) end
      local p, t = hl.jit(jvp)(args[1], args[2], d)
      local pe, te = jvp(args[1], args[2], d)
      close(p, f(unpack(args)), 1e-12)
      close(t, directional(f, args, d), 1e-6)
      close(t, te, 1e-12)
      close(p, pe, 1e-12)
      local stmt = hl.jit(jvp):lower(args[1], args[2], d):stmt()
      assert.is_true(loops_in(stmt) >= 2, "the loop and its tangent loop")
    end)
  end
  it("jacfwd agrees with jacrev and eager, and the tangents of captures flow into the steps", function()
    local f = function(a, b) return hl.fori_loop(1, 5, function(_, c) return hl.tanh(c * b) + a * 0.2 end, a) end
    local jf = hl.jit(hl.jacfwd(f, {1, 2}))(x, w)
    local jr = hl.jacrev(f, {1, 2})(x, w)
    close(jf[1], jr[1], 1e-12)
    close(jf[2], jr[2], 1e-12)
    assert.is_true(loops_in(hl.jit(hl.jacfwd(f, {1, 2})):lower(x, w):stmt()) >= 2)
  end)
  it("compile once: the jvp's and the Hessian's traced programs do not grow with the number of steps", function()
    local function loop(steps)
      return function(a) return hl.fori_loop(1, steps, function(_, c) return c * 0.9999 + hl.sin(c) * 1e-4 end, a) end
    end
    local function lines(f, ...)
      local _, n = tostring(hl.trace(f, ...)):gsub("\n", "")
      return n
    end
    local function jvp_of(steps) return function(a, t) return hl.jvp(loop(steps), {a}, {t}) end end
    assert.are.equal(lines(jvp_of(10), x, u), lines(jvp_of(10000), x, u))
    local function hess_of(steps) return hl.hessian(function(a) return hl.sum(loop(steps)(a)) end) end
    assert.are.equal(lines(hess_of(10), x), lines(hess_of(1000), x))
    local _, t = hl.jit(jvp_of(10000))(x, u)
    close(t, slow_step_derivative(x, u:totable(), 10000), 1e-10)
  end)
  it("take second derivatives in every order: hessian, jvp of grad, grad of jvp, jacfwd of jacfwd", function()
    local f = function(a) return hl.sum(hl.fori_loop(1, 4, function(_, c) return hl.sin(c) * a + c * 0.5 end, a)) end
    local h = hl.hessian(f)(x)
    close(hl.jit(hl.hessian(f))(x), h, 1e-12)
    local hvp = function(a, t) local _, r = hl.jvp(hl.grad(f), {a}, {t}) return r end
    close(hl.jit(hvp)(x, u), hl.matmul(h, u), 1e-12)
    local gjvp = hl.grad(function(a) local _, r = hl.jvp(f, {a}, {u}) return r end)
    close(hl.jit(gjvp)(x), hl.matmul(h, u), 1e-12)
    close(hl.jit(hl.jacfwd(hl.jacfwd(f)))(x), h, 1e-12)
  end)
  it("jvp and grad inside a loop body, by a value from outside the body", function()
    local f = function(a, b)
      return hl.fori_loop(1, 3, function(_, c)
        local _, t = hl.jvp(function(q) return hl.sin(q) * c end, {b}, {hl.ones_like(b)})
        local g = hl.grad(function(q) return hl.sum(hl.exp(q) * c) end)(b)
        return c * 0.5 + t + g
      end, a)
    end
    close(hl.jit(f)(x, w), f(x, w), 1e-12)
  end)
  it("under vmap: jvp per example equals the examples one by one", function()
    local f = function(a) return hl.fori_loop(1, 5, function(_, c) return hl.sin(c) * w + c * 0.5 end, a) end
    local batch = hl.reshape(hl.linspace(-1, 1, 6):astype(F64), {2, 3})
    local tb = hl.jit(hl.vmap(function(a) local _, t = hl.jvp(f, {a}, {u}) return t end))(batch)
    for i = 1, 2 do
      local _, t = hl.jvp(f, {batch[i]}, {u})
      close(tb[i], t, 1e-12)
    end
  end)
end)

describe("vmap through compiled loops inside jit", function()
  -- the replay batches each loop into one compiled loop over the batch
  local w = hl.array({0.5, -0.3, 0.8}, F64)
  local X = hl.reshape(hl.linspace(-1, 1, 12):astype(F64), {4, 3})
  local R = hl.reshape(hl.linspace(0, 1, 60):astype(F64), {4, 5, 3})
  local f = function(x)
    return hl.fori_loop(1, 5, function(i, c) return hl.sin(c * w) + x * 0.1 + i:astype(F64) * 0.01 end, x)
  end
  local g = function(x, r)
    return hl.scan(function(c, row) return c * row + x, hl.tanh(c) end, x, r)
  end
  -- f applied to each row by a Lua loop, stacked
  local function rows(fn, ...)
    local args, n = {...}, select(1, ...).shape[1]
    local outs = {}
    for i = 1, n do
      local a = {}
      for k, v in ipairs(args) do a[k] = v[i] end
      outs[i] = {fn(unpack(a))}
    end
    local stacked = {}
    for k = 1, #outs[1] do
      local parts = {}
      for i = 1, n do parts[i] = outs[i][k] end
      stacked[k] = hl.stack(parts, 1)
    end
    return unpack(stacked)
  end
  it("fori_loop: equals the rows one by one, and stays a compiled loop", function()
    local jf = hl.jit(hl.vmap(f))
    close(jf(X), rows(f, X))
    assert.truthy(jf:lower(X):stmt():find("hl_stage_loop", 1, true))
  end)
  it("scan: batched and unbatched scanned arrays, stacked outputs batched first", function()
    local c, ys = hl.jit(hl.vmap(g))(X, R)
    local wc, wys = rows(g, X, R)
    close(c, wc)
    close(ys, wys)
    assert.are.same({4, 5, 3}, ys.shape)
    c, ys = hl.jit(hl.vmap(g, {1, false}))(X, R[1])
    wc, wys = rows(function(x) return g(x, R[1]) end, X)
    close(c, wc)
    close(ys, wys)
  end)
  it("per-example gradients, the gradient of a vmap, and vmap of vmap", function()
    local loss = function(x) return hl.sum(hl.fori_loop(1, 6, function(_, c) return hl.sin(c * w) + 0.1 * c end, x) ^ 2) end
    close(hl.jit(hl.vmap(hl.grad(loss)))(X), rows(hl.grad(loss), X))
    local total = function(x) return hl.sum(hl.vmap(loss)(x)) end
    close(hl.jit(hl.grad(total))(X), rows(hl.grad(loss), X))
    local X2 = hl.reshape(X, {2, 2, 3})
    close(hl.jit(hl.vmap(hl.vmap(f)))(X2), hl.reshape(rows(f, X), {2, 2, 3}))
  end)
  it("while_loop: steps go on while any example's condition holds, the others keep their carries", function()
    local grow = function(x)
      return hl.while_loop(function(c) return hl.lt(hl.sum(c[1]), 10) end,
                           function(c) return {c[1] * 1.5 + 0.1, c[2] + 1} end, {x, hl.array(0, "int32")})
    end
    local B = hl.array({{1, 2}, {3, 0.5}, {20, 1}, {0.1, 0.1}}, F64)
    local jg = hl.jit(hl.vmap(grow))
    local r = jg(B)
    local want_c, want_n = {}, {}
    for i = 1, 4 do
      local c = grow(B[i])
      want_c[i], want_n[i] = c[1], c[2]
    end
    close(r[1], hl.stack(want_c, 1), 1e-12)
    assert.are.same({3, 3, 0, 8}, r[2]:totable())
    assert.are.same(hl.stack(want_n, 1):totable(), r[2]:totable())
    assert.truthy(jg:lower(B):stmt():find("hl_stage_loop", 1, true))
  end)
  it("compile once: the batched program does not grow with the number of steps", function()
    local function sim(n) return hl.vmap(function(x) return hl.fori_loop(1, n, function(_, c) return c * 0.999 end, x) end) end
    local small, big = tostring(hl.trace(sim(10), X)), tostring(hl.trace(sim(10000), X))
    local _, lines_small = small:gsub("\n", "")
    local _, lines_big = big:gsub("\n", "")
    assert.are.equal(lines_small, lines_big)
    close(hl.jit(sim(10000))(X), X * 0.999 ^ 10000, 1e-9)
  end)
end)

describe("the heat sample", function()
  it("runs its compiled loop and agrees with eager steps (short settings)", function()
    local root = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/") or "."
    -- (on the default device: the GPU under scripts/test-gpu)
    local p = io.popen("cd '" .. root .. "' && luajit samples/heat.lua 32 100 2>&1")
    local out = p:read("*a")
    local ok = p:close()
    assert.is_true(ok == true or ok == 0, out)
    assert.truthy(out:find("ran 100 steps", 1, true), out)
    local diff = tonumber(out:match("differ by ([%d%.e%-+]+)"))
    assert.is_true(diff ~= nil and diff < 1e-3, out)
    -- the gradient through the loop: diffusion is linear, so <gradient, plate> is the centre
    local inner, centre = out:match("<gradient, plate> = ([%d%.e%-+]+), the centre's final temperature = ([%d%.e%-+]+)")
    assert.is_true(inner ~= nil and math.abs(tonumber(inner) - tonumber(centre)) < 1e-3 * math.max(1, tonumber(centre)), out)
    -- and by forward mode: a perturbation moves as a plate does
    local gap = tonumber(out:match("moves as a plate does: they differ by ([%d%.e%-+]+)"))
    assert.is_true(gap ~= nil and gap < 1e-5, out)
  end)
end)

describe("compiled loops that fail or grow", function()
  it("fail the call with the loop's message when the loop fails as it runs", function()
    -- the stacked outputs (2^21 steps of 2^39 elements) cannot be allocated; the pipeline reads
    -- one row of them, so nothing else is large. (Halide's own check of an extern stage's result
    -- is compiled out: the run used to return whatever the buffer held.)
    local f = hl.jit(function(xs)
      local _, ys = hl.scan(function(c, x) return c, hl.broadcast_to(x, {2 ^ 19, 2 ^ 20}) end, hl.zeros(1), xs)
      return hl.sum(ys[{1, 1}])
    end)
    has(err_of(f, hl.zeros({2 ^ 21, 1})), "halua: array: shape [2097152,524288,1048576] is too large to allocate")
  end)
  it("run any number of loops in one pipeline, nested too", function()
    local f = hl.jit(function(a)
      local c = a
      for _ = 1, 70 do c = hl.fori_loop(1, 2, function(_, v) return hl.fori_loop(1, 3, function(_, w) return w + 1 end, v) end, c) end
      return c
    end)
    close(f(hl.zeros(3)), {420, 420, 420})
  end)
  it("say when a body uses more than 64 arrays, as the loop is traced", function()
    local consts = {}
    for i = 1, 70 do consts[i] = hl.full({3}, i) end
    local f = hl.jit(function(a)
      return hl.fori_loop(1, 2, function(_, v)
        for i = 1, 70 do v = v + consts[i] end
        return v
      end, a)
    end)
    has(err_of(f, hl.zeros(3)), "halua: fori_loop: the loop's body uses 72 arrays (its arguments and the values it uses from outside), more than 64")
  end)
end)

describe("loops inside jit for cuda", function()
  -- tracing and lowering for cuda need no GPU; scripts/test-gpu runs the specs above there
  local x = hl.ones({4})
  it("compile as loops: the loop is a CUDA stage whose body is a CUDA pipeline of its own", function()
    local function f(steps)
      return hl.jit(function(a) return hl.fori_loop(1, steps, function(i, c) return c * 2 + i end, a) * 3 end, {device = "cuda"})
    end
    local small, big = f(8):lower(x), f(10000):lower(x)
    assert.are.equal(select(2, small:ir():gsub("\n", "")), select(2, big:ir():gsub("\n", "")))
    local stmt = big:stmt()
    -- the loop's result is allocated in device memory, written by the loop stage, and marked
    -- as newer there than on the host
    local produce = stmt:match("produce (n%d+%$?%d*) {")
    assert.truthy(produce, "no produce block for the loop's result")
    local block = stmt:match("produce " .. produce:gsub("%$", "%%$") .. " {(.-)\n}")
    assert.truthy(block:find("halide_device_malloc(", 1, true), block)
    assert.truthy(block:find("halide_cuda_device_interface", 1, true), block)
    assert.truthy(block:find("hl_stage_loop_1(", 1, true), block)
    assert.truthy(block:find("_halide_buffer_set_device_dirty", 1, true), block)
    local bodies = big:loop_ptx()
    assert.are.equal(1, #bodies)
    assert.truthy(bodies[1]:find(".entry", 1, true), "the body has no kernel")
  end)
  it("keep empty values off the device: no allocation of nothing, no launch over nothing", function()
    -- Halide's CUDA runtime aborts the process on a device allocation of no bytes
    local f = hl.jit(function(a, e)
      local c = hl.fori_loop(1, 3, function(_, v) return v * 2 end, e * 1)
      local d = hl.fori_loop(1, 3, function(_, v) return v + 1 end, c)
      return a + 1, d, hl.sum(c) + a
    end, {device = "cuda"})
    local stmt = f:lower(x, hl.ones({0})):stmt()
    -- the empty loop results are constants: no loop stage, so no device buffer for them
    assert.is_nil(stmt:find("hl_stage_loop_", 1, true), stmt)
    local _, launches = stmt:gsub("halide_cuda_run%(", "")
    assert.are.equal(2, launches)   -- a + 1 and sum(c) + a; the empty d is written on the host
    -- an empty 2-byte float carry (its bit patterns would be a stage of their own)
    local h = hl.jit(function(a, e)
      return a * 2, hl.fori_loop(1, 3, function(_, v) return v * 2 end, (e * 3):astype("float16"))
    end, {device = "cuda"})
    stmt = h:lower(x, hl.ones({0})):stmt()
    assert.is_nil(stmt:find("device_malloc", 1, true), stmt)
    -- a product over K = 0 of values the pipeline computes: zeros, no cuBLAS stage
    local m = hl.jit(function(p, q) return hl.matmul(p * 2, q * 2) end, {device = "cuda"})
    stmt = m:lower(hl.ones({3, 0}), hl.ones({0, 4})):stmt()
    assert.is_nil(stmt:find("hl_stage_cublas_matmul", 1, true), stmt)
  end)
  it("compile while loops, scans, and loops under reverse and forward mode for cuda too", function()
    local w = hl.jit(function(a) return hl.while_loop(function(c) return hl.lt(hl.sum(c), 100) end, function(c) return c * 3 end, a) end, {device = "cuda"})
    assert.are.equal(2, #w:lower(x):loop_ptx())   -- the body and the condition
    local g = hl.jit(function(a) return hl.scan(function(c, r) return c + r, c end, a, hl.ones({200, 4})) end, {device = "cuda"})
    assert.are.equal(1, #g:lower(x):loop_ptx())
    local d = hl.jit(hl.grad(function(a) return hl.sum(hl.fori_loop(1, 500, function(_, c) return hl.sin(c) * 0.5 end, a)) end), {device = "cuda"})
    assert.is_true(#d:lower(x):loop_ptx() >= 2)   -- the forward loop and the backward loop
    local loop = function(a) return hl.fori_loop(1, 500, function(_, c) return hl.sin(c) * 0.5 end, a) end
    local j = hl.jit(function(a, t) return hl.jvp(loop, {a}, {t}) end, {device = "cuda"})
    assert.are.equal(2, #j:lower(x, x):loop_ptx())   -- the loop and its tangent loop
  end)
end)

describe("Ctrl-C (SIGINT) during a compiled loop or a long pipeline", function()
  local root = debug.getinfo(1, "S").source:match("^@(.*/)tests/lua/") or "./"
  local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
  local endless = "hl.jit(function(x) return hl.while_loop(function(c) return c:lt(1e30) end, " ..
                  "function(c) return c * 1.0000001 + 1e-9 end, x) end)"
  local function run(cmd)
    local p = assert(io.popen(cmd .. " 2>&1"))
    local out = p:read("*a")
    p:close()
    return out
  end

  it("stops the call with halua: interrupted, and the script goes on", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    -- (the loop is compiled by a first call that ends at once, and Ctrl-C comes a second after
    -- "running": a compile may take seconds, on a GPU say, and a Ctrl-C during it is LuaJIT's)
    f:write('local hl = require "halua"\nlocal f = ' .. endless .. '\nf(hl.array(1e31))\n' ..
            'io.stdout:write("running\\n") io.stdout:flush()\n' ..
            'print("after:", pcall(f, hl.array(1)))\nprint("still here", hl.ones(2):sum():item())\n')
    f:close()
    local log = os.tmpname()
    local out = run(string.format("cd %s && (luajit %s > %s 2>&1 & pid=$!; " ..
                                  "for i in $(seq 600); do grep -q running %s && break; sleep 0.1; done; sleep 1; " ..
                                  "kill -INT $pid; sleep 2; kill -0 $pid 2>/dev/null && echo STILL-RUNNING && kill -9 $pid; " ..
                                  "wait $pid; cat %s)", q(root), q(script), q(log), q(log), q(log)))
    os.remove(script)
    os.remove(log)
    assert.truthy(out:find("after:\tfalse\thalua: interrupted", 1, true), out)
    assert.truthy(out:find("still here\t2", 1, true), out)
    assert.falsy(out:find("STILL-RUNNING", 1, true), out)
  end)

  it("stops a long pipeline without loops between its parallel tasks, eager or jitted", function()
    -- a product sized to take about 12 s on this machine (6000 to 14000 on a side; a 6000x6000
    -- one takes several seconds on 2 cores, well under one on 16): each Ctrl-C ends one within
    -- a task's time
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write('local hl = require "halua"\nlocal ffi = require "ffi"\n' ..
            'ffi.cdef "typedef struct { long s, ns; } hl_test_ts; int clock_gettime(int, hl_test_ts *);"\n' ..
            'local ts = ffi.new("hl_test_ts")\n' ..
            'local function now() ffi.C.clock_gettime(1, ts) return tonumber(ts.s) + tonumber(ts.ns) * 1e-9 end\n' ..
            'local c = hl.ones({1500, 1500})\nhl.matmul(c, c)\nlocal t0 = now()\nhl.matmul(c, c)\n' ..
            'local n = math.floor(1500 * (12 / (now() - t0)) ^ (1 / 3))\n' ..
            'local a = hl.ones({math.max(6000, math.min(14000, n)), math.max(6000, math.min(14000, n))})\n' ..
            'local j = hl.jit(function(x) return hl.tanh(hl.matmul(x, x) * 0.5):sum() end)\n' ..
            'j(hl.ones({2, 2}))\n' ..   -- compiled before the clock starts
            'io.stdout:write("running\\n") io.stdout:flush()\n' ..
            'local t = os.time()\nprint("eager:", pcall(hl.matmul, a, a))\n' ..
            'print("jit:", pcall(j, a))\nprint("still here", hl.ones(2):sum():item(), os.time() - t)\n')
    f:close()
    -- (on the host: a GPU finishes the product long before the first Ctrl-C)
    local out = run(string.format("cd %s && (HALUA_DEVICE=cpu luajit %s & pid=$!; sleep 3; kill -INT $pid; sleep 2; kill -INT $pid; sleep 3; " ..
                                  "kill -0 $pid 2>/dev/null && echo STILL-RUNNING && kill -9 $pid; wait $pid)", q(root), q(script)))
    os.remove(script)
    assert.truthy(out:find("eager:\tfalse\thalua: interrupted", 1, true), out)
    assert.truthy(out:find("jit:\tfalse\thalua: interrupted", 1, true), out)
    assert.truthy(out:find("still here\t2", 1, true), out)
    assert.falsy(out:find("STILL-RUNNING", 1, true), out)
  end)

  it("keeps the REPL session", function()
    local fifo = os.tmpname()
    os.remove(fifo)
    -- (on the host: the Ctrl-C is meant for the running loop, and a GPU's compile of it takes longer
    -- than the two seconds)
    local out = run(string.format("cd %s && mkfifo %s && (HALUA_DEVICE=cpu luajit -e 'require(\"halua.repl\").run()' < %s & pid=$!; exec 3>%s; " ..
                                  "echo %s >&3; sleep 2; kill -INT $pid; sleep 1; echo 'print(\"alive\", 1 + 1)' >&3; sleep 1; " ..
                                  "exec 3>&-; wait $pid); rm -f %s", q(root), q(fifo), q(fifo), q(fifo),
                                  q("(" .. endless .. ")(hl.array(1))"), q(fifo)))
    assert.truthy(out:find("halua: interrupted", 1, true), out)
    assert.truthy(out:find("alive\t2", 1, true), out)
  end)
end)
