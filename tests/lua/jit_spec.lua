-- hl.jit: the same answers as eager and NumPy, pytrees, static_argnums, the cache, tracing and
-- lowering, and the errors for using a tracer as a Lua value.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"

math.randomseed(51)

local x, y = np.rand({8, 16}, -1, 1), np.rand({16, 4}, -1, 1)

suite("jit matches NumPy", function(case)
  local mlp = hl.jit(function(a, w) return hl.nn.softmax(hl.tanh(hl.matmul(a, w)) * 2, 2) end)
  case("a small network", function() return mlp(x, y) end,
       "(lambda z: np.exp(z - z.max(1, keepdims=True)) / np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True))(np.tanh(a @ b) * 2)",
       {x, y}, {rtol = 1e-5, atol = 1e-6})
  local chain = hl.jit(function(a) return hl.sum(hl.exp(a) * a - hl.log1p(a * a), 2, true) end)
  case("a fused chain with a reduction", function() return chain(x) end, "np.sum(np.exp(a) * a - np.log1p(a * a), axis=1, keepdims=True)", {x}, {rtol = 1e-5, atol = 1e-5})
  local views = hl.jit(function(a) return hl.reshape(a.T, {4, 32})[{{2, 3}}] + hl.concatenate({a[1], a[8]}, 1) end)
  case("views, reshapes and concatenation", function() return views(x) end,
       "a.T.reshape(4, 32)[1:3] + np.concatenate([a[0], a[7]])", {x})
  local captured = hl.array({1, 2, 3, 4})
  local uses_upvalue = hl.jit(function(a) return hl.matmul(a, y) + captured end)
  case("a captured array is an input, not a constant folded at trace time", function() return uses_upvalue(x) end,
       "a @ b + np.array([1, 2, 3, 4], np.float32)", {x, y}, {rtol = 1e-5, atol = 1e-6})
  local consts = hl.jit(function(a) return a * 0 + hl.eye(16)[{{1, 8}}] + 2 end)
  case("arrays made inside the function", function() return consts(x) end, "a * 0 + np.eye(16, dtype=np.float32)[:8] + 2", {x})
  local ints = hl.jit(function(a, b) return (a + b) % 3, hl.argmax(a, 2) end)
  local ia, ib = np.rand({3, 5}, -9, 9, "int32"), np.rand({3, 5}, -9, 9, "int32")
  case("integer results", function() return (ints(ia, ib)) end, "np.mod(a + b, 3)", {ia, ib}, {dtype = "int32"})
  case("a second result", function() return select(2, ints(ia, ib)) end, "np.argmax(a, axis=1) + 1", {ia, ib}, {dtype = "int64"})
end)

describe("jit", function()
  it("gives what eager gives", function()
    local f = function(a, w) return hl.max(hl.matmul(a, w), 1) - hl.mean(a) end
    local e, j = f(x, y), hl.jit(f)(x, y)
    for i, v in ipairs(e:totable()) do assert.is_true(math.abs(v - j:totable()[i]) < 1e-5) end
  end)

  it("takes and returns pytrees, string keys in sorted order", function()
    local f = hl.jit(function(p, s)
      return {out = hl.matmul(s.input, p.w) + p.b, n = 3, parts = {p.b * 2, p.w.T}}
    end)
    local p = {w = y, b = hl.ones({4})}
    local r = f(p, {input = x})
    assert.are.equal(3, r.n)
    assert.are.same({8, 4}, r.out.shape)
    assert.are.same({2, 2, 2, 2}, r.parts[1]:totable())
    assert.are.same({4, 16}, r.parts[2].shape)
    local leaves, def = hl.tree.flatten({b = 1, a = {2, 3}, 4})
    assert.are.same({4, 2, 3, 1}, leaves)
    assert.are.same({b = 1, a = {2, 3}, 4}, hl.tree.unflatten(def, leaves))
    assert.are.same({a = 2, b = {4}}, hl.tree.map(function(v) return v * 2 end, {a = 1, b = {2}}))
  end)

  it("retraces only for new shapes and dtypes, and reuses compiled code", function()
    local traces = 0
    local f = hl.jit(function(a) traces = traces + 1; return a * 2 + 1 end)
    local before = hl.cache_info()
    f(hl.ones({3}))
    f(hl.zeros({3}) + 5)
    assert.are.equal(1, traces)
    f(hl.ones({4}))
    f(hl.ones({3}, "float64"))
    assert.are.equal(3, traces)
    local after = hl.cache_info()
    assert.is_true(after.misses >= before.misses + 3)
    assert.is_true(after.entries >= before.entries + 3)
    assert.is_true(after.compile_ms > before.compile_ms)
    -- the same program traced by another function is a cache hit
    local g = hl.jit(function(a) return a * 2 + 1 end)
    local hits = hl.cache_info().hits
    g(hl.ones({3}))
    assert.is_true(hl.cache_info().hits > hits)
  end)

  it("honours static_argnums: Lua control flow on a static argument", function()
    local traces = 0
    local f = hl.jit(function(a, n, mode)
      traces = traces + 1
      local r = a
      for _ = 1, n do r = r * 2 end
      if mode == "neg" then r = -r end
      return r
    end, {static_argnums = {2, 3}})
    assert.are.same({8, 8}, f(hl.ones({2}), 3, "pos"):totable())
    assert.are.same({-4, -4}, f(hl.ones({2}), 2, "neg"):totable())
    assert.are.same({8, 8}, f(hl.ones({2}), 3, "pos"):totable())
    assert.are.equal(2, traces)
  end)

  it("treats Lua numbers in arguments as static", function()
    local f = hl.jit(function(a, s) return a * s end)
    assert.are.same({3, 3}, f(hl.ones({2}), 3):totable())
    assert.are.same({5, 5}, f(hl.ones({2}), 5):totable())
  end)

  it("inlines a jitted function called while tracing another", function()
    local inner = hl.jit(function(a) return a + 1 end)
    local outer = hl.jit(function(a) return inner(a) * 2 end)
    assert.are.same({4, 4}, outer(hl.ones({2})):totable())
    assert.truthy(outer:lower(hl.ones({2})):ir():find("add"))
  end)

  it("prints traces and lowers to IR, a loop nest and assembly", function()
    local f = function(a, b) return hl.tanh(a * b):sum(2) end
    local t = tostring(hl.trace(f, x, x))
    assert.truthy(t:find("lambda"))
    assert.truthy(t:find("mul"))
    assert.truthy(t:find("tanh"))
    assert.truthy(t:find("sum"))
    assert.truthy(t:find("float32%[8,16%]"))
    local lowered = hl.jit(f):lower(x, x)
    assert.are.equal(t, lowered:ir())
    local stmt = lowered:stmt()
    assert.truthy(stmt:find("produce"))
    assert.truthy(stmt:find("for"))
    assert.truthy(lowered:asm():find("vfmadd") or lowered:asm():find("vmul"))
    assert.is_true(lowered:compile_ms() > 0)
  end)

  it("prints tracers while tracing", function()
    local seen
    hl.jit(function(a) seen = tostring(a); return a end)(x)
    assert.are.equal("<traced float32[8,16]>", seen)
  end)

  it("refuses to turn a tracer into a Lua value, naming what to use instead", function()
    for _, f in ipairs {
      function(a) return a:item() end,
      function(a) return a:totable() end,
      function(a) return hl.sum(a):item() > 0 and a or -a end,
    } do
      local ok, err = pcall(hl.jit(f), x)
      assert.is_false(ok)
      assert.truthy(err:find("^halua: "))
      assert.truthy(err:find("hl.cond", 1, true))
      assert.truthy(err:find("hl.where", 1, true))
      assert.truthy(err:find("static_argnums", 1, true))
    end
  end)

  it("refuses tracers that escape their trace", function()
    local leaked
    hl.jit(function(a) leaked = a * 2; return a end)(x)
    local ok, err = pcall(function() return leaked + 1 end)
    assert.is_false(ok)
    assert.truthy(err:find("^halua: add: this tracer escaped"))
  end)

  it("refuses non-functions and bad static_argnums", function()
    local ok, err = pcall(hl.jit, 3)
    assert.is_false(ok)
    assert.truthy(err:find("^halua: jit: expected a function"))
    ok, err = pcall(hl.jit, function() end, {static_argnums = {0}})
    assert.is_false(ok)
    assert.truthy(err:find("static_argnums"))
    ok, err = pcall(hl.jit(function(a) return a end), print)
    assert.is_false(ok)
    assert.truthy(err:find("^halua: jit: argument 1 holds a function"))
  end)
end)
