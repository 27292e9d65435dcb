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
    -- compiled, or loaded from the disk cache of an earlier run
    assert.is_true(after.compile_ms + after.disk_load_ms > before.compile_ms + before.disk_load_ms)
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
    assert.truthy(stmt:find("for") or stmt:find("gpu_block"))
    if hl.default_device() == "cpu" then
      assert.truthy(lowered:asm():find("vfmadd") or lowered:asm():find("vmul"))
    end
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
    assert.truthy(err:find("^halua: add: this value is a leaked tracer: it escaped the hl%.jit function that traced it"), err)
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

-- jit against NumPy for every dtype in scope and for 0-d, zero-size and view inputs
suite("jit over dtypes and shapes", function(case)
  local f = hl.jit(function(a, b) return hl.maximum(a * b, a - b) + hl.abs(b) end)
  for _, dt in ipairs {"float32", "float64", "int32", "int64", "uint8"} do
    local a, b = np.rand({3, 4}, 0, 9, dt), np.rand({4}, 0, 9, dt)
    case("elementwise chain on " .. dt, function() return f(a, b) end, "np.maximum(a * b, a - b) + np.abs(b)", {a, b}, {dtype = dt})
  end
  local g = hl.jit(function(a) return hl.logical_and(a, hl.logical_not(a[1])) end)
  local bl = np.rand({3, 4}, 0, 1, "bool")
  case("bool logic", function() return g(bl) end, "np.logical_and(a, np.logical_not(a[0]))", {bl}, {dtype = "bool"})
  local s = hl.jit(function(a, b) return hl.sin(a) * b + 1 end)
  local z = hl.array(0.5)
  case("0-d inputs", function() return s(z, z) end, "np.sin(a) * a + 1", {z}, {dtype = "float32"})
  local e = hl.zeros({0, 3})
  case("zero-size inputs", function() return s(e, hl.ones({3})) end, "np.zeros((0, 3), np.float32)", {}, {dtype = "float32"})
  local r = hl.jit(function(a) return hl.sum(a, {1, 3}, true), hl.argmax(a, -1), hl.mean(a), hl.logsumexp(a, 2) end)
  local x3 = np.rand({2, 3, 4}, -2, 2)
  case("reductions: sum over {1,3} keepdims", function() return (r(x3)) end, "np.sum(a, axis=(0, 2), keepdims=True)", {x3}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  case("reductions: argmax -1", function() return select(2, r(x3)) end, "np.argmax(a, axis=-1) + 1", {x3}, {dtype = "int64"})
  case("reductions: mean", function() return select(3, r(x3)) end, "np.mean(a)", {x3}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  case("reductions: logsumexp", function() return select(4, r(x3)) end, "np.log(np.sum(np.exp(a), axis=1))", {x3}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  local w = hl.jit(function(a) return hl.where(hl.gt(a, 0), hl.sqrt(a), -a), hl.clip(a, -1, 1) end)
  case("where and clip", function() return (w(x3)) end, "np.where(a > 0, np.sqrt(np.abs(a)), -a)", {x3}, {dtype = "float32"})
  case("where and clip: clip", function() return select(2, w(x3)) end, "np.clip(a, -1, 1)", {x3}, {dtype = "float32"})
  local id = hl.jit(function(a) return a end)
  case("the identity", function() return id(x3) end, "a", {x3}, {dtype = "float32"})
  -- inputs that are views: a transposed, a strided and a broadcast array with the same shape
  local h = hl.jit(function(a) return a * 10 + hl.sum(a, 1) end)
  local m = np.rand({4, 4}, -1, 1)
  local big = np.rand({8, 8}, -1, 1)
  case("a contiguous input", function() return h(m) end, "a * 10 + np.sum(a, axis=0)", {m}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  case("then a transposed view of the same shape", function() return h(m.T) end, "a.T * 10 + np.sum(a.T, axis=0)", {m}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  case("then a strided view of the same shape", function() return h(big[{{1, 8, 2}, {8, 1, -2}}]) end,
       "a[0:8:2, ::-2] * 10 + np.sum(a[0:8:2, ::-2], axis=0)", {big}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  case("then a broadcast view of the same shape", function() return h(hl.broadcast_to(m[2], {4, 4})) end,
       "np.broadcast_to(a[1], (4, 4)) * 10 + np.sum(np.broadcast_to(a[1], (4, 4)), axis=0)", {m}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  -- promotion inside jit follows the eager rules
  local p = hl.jit(function(a, b) return a + b, a * 2.5, b / 2 end)
  local i32, f64 = hl.array({1, 2, 3}, "int32"), hl.array({0.1, 0.2, 0.3}, "float64")
  case("int32 + float64 -> float64 in jit", function() return (p(i32, f64)) end, "a + b", {i32, f64}, {dtype = "float64"})
  case("int32 * 2.5 -> float32 in jit", function() return select(2, p(i32, f64)) end, "a.astype(np.float32) * np.float32(2.5)", {i32}, {dtype = "float32"})
  case("float64 / 2 stays float64 in jit", function() return select(3, p(i32, f64)) end, "b / 2", {i32, f64}, {dtype = "float64"})
  local q = hl.jit(function(a) return a / hl.array({2, 4, 8}, "int32") end)
  case("int32 / int32 -> float32 in jit", function() return q(i32) end, "(a / np.array([2, 4, 8])).astype(np.float32)", {i32}, {dtype = "float32"})
end)

describe("jit, continued", function()
  local function same(e, j)
    assert.are.equal(e.dtype, j.dtype)
    assert.are.same(e.shape, j.shape)
    local et, jt = hl.reshape(e, {e.size}):totable(), hl.reshape(j, {j.size}):totable()
    for i = 1, #et do
      local a, b = et[i], jt[i]
      assert.is_true(a == b or (a ~= a and b ~= b) or math.abs(a - b) <= 1e-5 * (1 + math.abs(a)),
                     "element " .. i .. ": eager " .. tostring(a) .. ", jit " .. tostring(b))
    end
  end

  it("gives what eager gives for several composed functions", function()
    local a, b = np.rand({6, 5}, -2, 2), np.rand({5, 3}, -2, 2)
    local fns = {
      function(p, q) return hl.nn.softmax(hl.matmul(p, q), 2) end,
      function(p, q) return hl.sum(hl.exp(-p * p) / (1 + hl.abs(p)), 1) + hl.max(q) end,
      function(p, q) return hl.where(hl.gt(p, 0), p, p * 0.01)[{{2, 5}, {-1, 1, -2}}] end,
      function(p, q) return hl.reshape(hl.transpose(p), {-1}) * hl.mean(q, 1)[1] end,
      function(p, q) return hl.concatenate({p, q.T}, 1):astype("float64") / 3 end,
      function(p, q) return hl.floor_divide(p * 10, 3) + hl.mod(p * 10, 3) end,
      function(p, q) return hl.logsumexp(hl.matmul(p, q), {1, 2}, true) - hl.argmax(p, 2):astype("float32") end,
    }
    for k, f in ipairs(fns) do
      local ok, err = pcall(same, f(a, b), hl.jit(f)(a, b))
      assert(ok, "function " .. k .. ": " .. tostring(err))
    end
  end)

  it("takes nested pytrees with array parts and string keys and returns them", function()
    local f = hl.jit(function(params, batch)
      local h = hl.tanh(hl.matmul(batch.x, params.layers[1].w) + params.layers[1].b)
      local out = hl.matmul(h, params.layers[2].w)
      return {loss = hl.mean((out - batch.y) ^ 2), stats = {out:max(), out:min()}, tag = "done", scale = params.scale}
    end)
    local params = {layers = {{w = np.rand({5, 4}, -1, 1), b = hl.zeros({4})}, {w = np.rand({4, 2}, -1, 1)}}, scale = 2}
    local batch = {x = np.rand({3, 5}, -1, 1), y = np.rand({3, 2}, -1, 1)}
    local r = f(params, batch)
    assert.are.equal("done", r.tag)
    assert.are.equal(2, r.scale)
    assert.are.same({}, r.loss.shape)
    local h = hl.tanh(hl.matmul(batch.x, params.layers[1].w) + params.layers[1].b)
    local out = hl.matmul(h, params.layers[2].w)
    assert.is_true(math.abs(r.loss:item() - hl.mean((out - batch.y) ^ 2):item()) < 1e-6)
    assert.is_true(math.abs(r.stats[1]:item() - out:max():item()) < 1e-6)
    assert.is_true(math.abs(r.stats[2]:item() - out:min():item()) < 1e-6)
    -- a different tree structure retraces and still works
    local r2 = f({layers = {{w = hl.zeros({5, 4}), b = hl.ones({4})}, {w = hl.ones({4, 2})}}, scale = 3, extra = hl.ones({1})}, batch)
    assert.are.equal(3, r2.scale)
    assert.is_true(math.abs(r2.stats[1]:item() - 4 * math.tanh(1)) < 1e-5)
  end)

  it("returns several results, including the same array twice and plain numbers", function()
    local f = hl.jit(function(a) local b = a + 1; return b, b, 7, {b, k = b * 2} end)
    local r1, r2, n, t = f(hl.ones({2}))
    assert.are.same({2, 2}, r1:totable())
    assert.are.same({2, 2}, r2:totable())
    assert.are.equal(7, n)
    assert.are.same({2, 2}, t[1]:totable())
    assert.are.same({4, 4}, t.k:totable())
  end)

  it("counts cache misses only for new signatures", function()
    local a, b, c = hl.ones({3, 2}), hl.ones({3, 2}) * 2, hl.ones({2, 3})
    local a64 = a:astype("float64")
    local f = hl.jit(function(p) return hl.sin(p) * 3.71 + hl.cos(p) end)
    local i0 = hl.cache_info()
    f(a)
    local i1 = hl.cache_info()
    assert.are.equal(i0.misses + 1, i1.misses, "the first call compiles once")
    assert.are.equal(i0.entries + 1, i1.entries)
    f(b)
    f(a)
    local i2 = hl.cache_info()
    assert.are.equal(i1.misses, i2.misses, "the same signature does not compile again")
    assert.are.equal(i1.entries, i2.entries)
    f(c)
    local i3 = hl.cache_info()
    assert.are.equal(i2.misses + 1, i3.misses, "a new shape compiles")
    f(a64)
    local i4 = hl.cache_info()
    assert.are.equal(i3.misses + 1, i4.misses, "a new dtype compiles")
    -- another function tracing to the same program reuses it: a hit, no miss
    local g = hl.jit(function(p) return hl.sin(p) * 3.71 + hl.cos(p) end)
    g(a)
    local i5 = hl.cache_info()
    assert.are.equal(i4.misses, i5.misses)
    assert.is_true(i5.hits > i4.hits)
    -- but a different constant is a different program
    local k = hl.jit(function(p) return hl.sin(p) * 3.7100000000000004 + hl.cos(p) end)
    k(a64)
    assert.are.equal(i5.misses + 1, hl.cache_info().misses)
  end)

  it("keeps programs that differ only in a float64 constant apart", function()
    local x = hl.array({1}, "float64")
    local f1 = hl.jit(function(p) return p * 1.0000000000000002 - 1 end)
    local f2 = hl.jit(function(p) return p * 1.0000000000000004 - 1 end)
    assert.are.equal(2 ^ -52, f1(x):item())
    assert.are.equal(2 ^ -51, f2(x):item())
  end)

  it("retraces for a new static value, including tables and booleans", function()
    local traces = 0
    local f = hl.jit(function(a, cfg, flip)
      traces = traces + 1
      local r = a * cfg.scale
      if flip then r = -r end
      return r
    end, {static_argnums = {2, 3}})
    assert.are.same({2, 2}, f(hl.ones({2}), {scale = 2}, false):totable())
    assert.are.same({-2, -2}, f(hl.ones({2}), {scale = 2}, true):totable())
    assert.are.same({3, 3}, f(hl.ones({2}), {scale = 3}, false):totable())
    assert.are.same({2, 2}, f(hl.ones({2}), {scale = 2}, false):totable())
    assert.are.equal(3, traces)
  end)

  it("recovers from an error while tracing", function()
    local f = hl.jit(function(a, b) return a + b end)
    local ok, err = pcall(f, hl.ones({2, 3}), hl.ones({4}))
    assert.is_false(ok)
    assert.truthy(err:find("^halua: add: cannot broadcast shapes %[2,3%] and %[4%]"))
    assert.are.same({2, 2}, f(hl.ones({2}), hl.ones({2})):totable())
    assert.are.same({3, 3}, (hl.ones({2}) * 3):totable())
    local g = hl.jit(function(a) return a:item() end)
    assert.is_false(pcall(g, hl.ones({1})))
    assert.are.same({5}, hl.jit(function(a) return a + 4 end)(hl.ones({1})):totable())
  end)

  it("prints a trace and lowers to IR and a loop nest naming the ops", function()
    local f = function(a, b) return hl.exp(hl.matmul(a, b)):max(1) end
    local x, y = np.rand({3, 4}, -1, 1), np.rand({4, 5}, -1, 1)
    local t = hl.trace(f, x, y)
    local s = tostring(t)
    assert.is_true(#s > 0)
    for _, word in ipairs {"matmul", "exp", "max", "float32%[3,4%]", "float32%[4,5%]"} do
      assert.truthy(s:find(word), "trace lacks " .. word .. ":\n" .. s)
    end
    local lowered = hl.jit(f):lower(x, y)
    assert.truthy(lowered:ir():find("matmul"))
    assert.truthy(#lowered:stmt() > 0)
    assert.truthy(lowered:stmt():find("for") or lowered:stmt():find("gpu_block"))
    assert.are.equal("string", type(tostring(lowered)))
  end)

  it("refuses tracer to Lua conversions inside jit with a message naming the alternatives", function()
    local x = np.rand({2}, -1, 1)
    for name, f in pairs {
      item = function(a) return a:sum():item() end,
      totable = function(a) local t = a:totable(); return a * t[1] end,
      len_then_item = function(a) return a[1]:item() end,
    } do
      local ok, err = pcall(hl.jit(f), x)
      assert.is_false(ok, name)
      assert.truthy(err:find("^halua: "), name .. ": " .. err)
      assert.truthy(err:find("hl.cond", 1, true) and err:find("hl.where", 1, true) and err:find("static_argnums", 1, true), name .. ": " .. err)
    end
  end)

  it("tonumber on a tracer cannot give a number", function()
    -- Lua's tonumber consults no metamethod, so it cannot raise; it must at least not give a value
    local seen = "unset"
    local ok = pcall(hl.jit(function(a) seen = tonumber(a); return a end), hl.ones({1}))
    assert.is_true(not ok or seen == nil)
  end)
end)

describe("jit, edge cases", function()
  local x = hl.array({1, 2, 3})
  it("writes every element of a stored value, at lengths that leave a vector tail", function()
    -- e = exp(b) is stored (used twice); s reads it and is stored for the extern stage: the
    -- last vector of s had been left unwritten at lengths 3, 5, 9 and 17
    for _, n in ipairs {3, 5, 7, 9, 17, 33} do
      for _, dt in ipairs {"float64", "float32"} do
        local b = hl.linspace(-1, 1, n):astype(dt)
        local function s_of(u) local e = hl.exp(u) return e * u + e end
        -- a stored value between (e2) that no extern stage reads: a sum's range is constant too
        local function deep(u) local e = hl.exp(u) local e2 = hl.exp(e * u + e - 2) return e2 * u + e2 end
        for name, f in pairs {
          reduce = function(u) local d = deep(u) return hl.sum(d) + hl.max(d) end,
          sortdeep = function(u) return hl.sort(deep(u)) end,
          sort = function(u) return hl.sort(s_of(u)) end,
          matmul = function(u) return hl.matmul(hl.reshape(s_of(u), {1, n}), hl.ones({n, 2}, dt)) end,
          loop = function(u) return hl.fori_loop(1, 2, function(_, c) return c * s_of(u) end, hl.ones({n}, dt)) end,
        } do
          local want, got = f(b), hl.jit(f)(b)
          local err = hl.max(hl.abs(got - want)):item()
          assert.is_true(err <= 1e-5 * hl.max(hl.abs(want)):item(), string.format("%s of %d %s: off by %g", name, n, dt, err))
        end
      end
    end
  end)
  it("computes a stored value that consumers read in part inside its region, reading no input before its first element", function()
    local f = function(u) local e = hl.exp(u) return e[3] + e[4] * 2 end
    local u = hl.linspace(0, 1, 100)
    assert.is_true(math.abs(hl.jit(f)(u):item() - f(u):item()) < 1e-5)
    local stmt = hl.jit(f):lower(u):stmt()
    assert.is_nil(stmt:find("ramp((int64)-", 1, true), "a vector starts before the input's first element")
  end)
  it("schedules a Lua loop's unrolled steps that each use a value twice (a walk per path would take 2^60 steps)", function()
    local f = function(u) for _ = 1, 60 do u = u * 0.5 + u * u end return u end
    local u = hl.full({3, 4}, 0.01, "float64")
    local want = f(u)
    local got = hl.jit(f)(u)
    assert.is_true(hl.max(hl.abs(got - want)):item() <= 1e-12 * hl.max(hl.abs(want)):item())
  end)
  it("transposes matrices of every dtype, jitted and eagerly, edge blocks and parallel bands included", function()
    local T = hl.jit(function(u) return hl.transpose(u) end)
    local on_cpu = hl.jit(function(u) return hl.transpose(u) end, {device = "cpu"})   -- (a CPU stage)
    assert.truthy(on_cpu:lower(hl.ones({3, 4})):stmt():find("hl_stage_cpu_transpose", 1, true), "not the blocked transpose")
    -- a transpose by axes {1, 2} is the identity
    local same = hl.reshape(hl.arange(6), {2, 3})
    assert.are.same(same:totable(), hl.jit(function(u) return hl.transpose(u, {1, 2}) end)(same):totable())
    -- a[x][y] = x * n + y, so transpose(a)[i][j] = j * n + i: built by broadcasting, no transpose
    local function cast(v, d)
      if d == "bool" then return hl.eq(v % 3, 0) end
      if d == "int8" or d == "uint8" then return (v % 100):astype(d) end
      if d == "float16" or d == "bfloat16" then return (v % 251):astype(d) end
      if d == "int64" then return v:astype(d) * 1099511627776 + 7 end   -- values past 32 bits
      return v:astype(d)
    end
    for _, sh in ipairs {{1, 1}, {1, 9}, {9, 1}, {3, 5}, {8, 8}, {130, 200}, {1000, 129}, {256, 256}, {300, 5}, {257, 520}} do
      local m, n = sh[1], sh[2]
      for _, d in ipairs {"float32", "float64", "int32", "int64", "float16", "bfloat16", "int8", "uint8", "bool"} do
        local a = cast(hl.reshape(hl.arange(m * n), sh), d)
        local want = cast(hl.reshape(hl.arange(n), {n, 1}) + hl.reshape(hl.arange(m), {1, m}) * n, d):totable()
        local t = T(a)
        assert.are.same({n, m}, t.shape)
        assert.are.same(want, t:totable(), d .. " jit " .. m .. "x" .. n)
        -- the transposed view made contiguous eagerly (a reshape copies it)
        assert.are.same(want, hl.reshape(hl.reshape(hl.transpose(a), {m * n}), {n, m}):totable(), d .. " eager " .. m .. "x" .. n)
      end
    end
    -- a parameter whose rows are apart (a slice), one read elsewhere too, and one that is an output
    local a = hl.reshape(hl.arange(300 * 200):astype("float32"), {300, 200})
    local s = a[{{2, 299}, {3, 150}}]
    -- s[r][c] = a[r + 1][c + 2] (0-based), so transpose(s)[i][j] = (j + 1) * 200 + i + 2
    local want = (hl.reshape(hl.arange(148), {148, 1}) + hl.reshape(hl.arange(298), {1, 298}) * 200 + 202):totable()
    assert.are.same(want, T(s):totable())
    local t, same, doubled = hl.jit(function(u) return hl.transpose(u), u, u * 2 end)(s)
    assert.are.same(want, t:totable())
    assert.are.same(s:totable(), same:totable())
    assert.are.same((s * 2):totable(), doubled:totable())
    -- rows in reverse (a negative row stride), every second row reversed, broadcast rows (stride
    -- 0): against an elementwise kernel over the transposed view
    for _, v in ipairs {a[{{-1, 1, -1}}], a[{{-1, 1, -2}, {5, 200}}], hl.broadcast_to(a[{{7, 7}}], {300, 200})} do
      local w = (hl.transpose(v) + 0):totable()
      assert.are.same(w, T(v):totable())
      assert.are.same(w, hl.reshape(hl.reshape(hl.transpose(v), {-1}), {#w, #w[1]}):totable())
    end
  end)
  it("compiles a result that depends only on a captured array", function()
    local cap = hl.array({10, 20, 30})
    local ok, r = pcall(hl.jit(function(a) return cap * 2 end), x)
    assert(ok, tostring(r))
    assert.are.same({20, 40, 60}, r:totable())
  end)
  it("compiles a function whose results only take shapes from its arguments (zeros_like)", function()
    local ok, r = pcall(hl.jit(function(a) return hl.zeros_like(a), hl.ones(a.shape) end), x)
    assert(ok, tostring(r))
    assert.are.same({0, 0, 0}, r:totable())
  end)
  it("compiles a function of no arguments", function()
    local ok, r = pcall(hl.jit(function() return hl.ones({2}) * 3 end))
    assert(ok, tostring(r))
    assert.are.same({3, 3}, r:totable())
  end)
  it("traces a function of no arguments (work on concrete values runs eagerly: the trace is empty)", function()
    local ok, r = pcall(function() return tostring(hl.trace(function() return hl.ones({2}) * 3 end)) end)
    assert(ok, tostring(r))
    assert.are.equal("{ lambda . let\n  in () }", r)
  end)
  it("takes a jitted function as the function to jit", function()
    local ok, r = pcall(function() return hl.jit(hl.jit(function(a) return a + 1 end))(x) end)
    assert(ok, tostring(r))
    assert.are.same({2, 3, 4}, r:totable())
  end)
  it("takes the same array for two arguments", function()
    assert.are.same({1, 4, 9}, hl.jit(function(a, b) return a * b end)(x, x):totable())
  end)
  it("passes nil and booleans through as static values", function()
    local f = hl.jit(function(a, b, c) return (b == nil and c) and a or -a end)
    assert.are.same({1, 2, 3}, f(x, nil, true):totable())
    assert.are.same({-1, -2, -3}, f(x, nil, false):totable())
  end)
  it("knows shapes and dtypes of tracers: #, shape, ndim, size, dtype", function()
    local f = hl.jit(function(a) return a * #a + a.shape[1] + a.ndim + a.size, a.dtype end)
    local r, dt = f(x)
    assert.are.same({10, 13, 16}, r:totable())
    assert.are.equal("float32", dt)
  end)
  it("returns a zero-size result and creation ops inside", function()
    assert.are.same({0}, hl.jit(function(a) return a[{{2, 1}}] end)(x).shape)
    assert.are.same({1, 2.5, 4}, hl.jit(function(a) return hl.matmul(hl.eye(3), a) + hl.linspace(0, 1, 3) end)(x):totable())
    assert.are.same({1, 3, 5}, hl.jit(function(a) return a + hl.arange(3) end)(x):totable())
  end)
  -- found by the program fuzzer: Halide 14's FindIntrinsics narrowed a vectorised product of two
  -- comparison results converted to numbers down to 1 bit and failed an internal assertion
  it("multiplies masks made from comparisons (mask * mask, square, * -1, integer pow), in every dtype", function()
    local v = hl.arange(1, 18, "float32")
    local want_and, want_lt = {}, {}
    for i = 1, 17 do
      want_and[i] = (i < 9 and i > 3) and 1 or 0
      want_lt[i] = i < 9 and 1 or 0
    end
    for _, dt in ipairs {"float32", "float64", "int8", "uint8", "int32", "int64"} do
      local f = hl.jit(function(a)
        local m, n = hl.lt(a, 9):astype(dt), hl.gt(a, 3):astype(dt)
        return m * n, hl.square(m), m ^ n, hl.lt(a, 9) * hl.gt(a, 3):astype(dt)
      end)
      local ok, p, sq, pw, mixed = pcall(f, v)
      assert(ok, dt .. ": " .. tostring(p))
      assert.are.same(want_and, p:totable(), dt)
      assert.are.same(want_lt, sq:totable(), dt)
      assert.are.same(want_and, mixed:totable(), dt)
      local want_pow = {}
      for i = 1, 17 do want_pow[i] = (i < 9 or i <= 3) and 1 or 0 end
      assert.are.same(want_pow, pw:totable(), dt)
    end
    assert.are.same({0, -1, -1}, hl.jit(function(a) return hl.gt(a, 1):astype("int32") * -1 end)(x):totable())
  end)
  -- found by the program fuzzer: Halide 14 rewrote a two-lane vector [a, b] of gathered floats
  -- as the ramp a + (b - a) * lane, which is not b (and NaN for an infinite or NaN b)
  it("copies rows of two gathered through a reshape exactly (tile, repeat), whatever the values", function()
    for _, dt in ipairs {"float32", "float64"} do
      local v = hl.array({{2 ^ 66, 1}, {3, 1 / 0}, {0 / 0, -2.5}}, dt)
      local tiled = hl.jit(function(a) return hl.tile(a, {2, 1}) end)(v)
      local want = {{2 ^ 66, 1}, {3, 1 / 0}, {0 / 0, -2.5}, {2 ^ 66, 1}, {3, 1 / 0}, {0 / 0, -2.5}}
      local got = tiled:totable()
      for r = 1, 6 do
        for c = 1, 2 do
          local g, w = got[r][c], want[r][c]
          assert(g == w or (g ~= g and w ~= w), string.format("%s [%d,%d]: %s, expected %s", dt, r, c, tostring(g), tostring(w)))
        end
      end
      assert.are.same(hl.tile(v, {2, 1}):astype("float64"):totable()[1], tiled:astype("float64"):totable()[1])
      local rep = hl.jit(function(a) return hl["repeat"](a[{{1, 2}}], 2, 1) end)(v):totable()
      assert.are.same({{2 ^ 66, 1}, {2 ^ 66, 1}, {3, 1 / 0}, {3, 1 / 0}}, rep)
    end
  end)
  -- found by the program fuzzer: squaring a constant base overflowed in Halide's constant folding
  it("raises a constant integer base to an array of exponents, wrapping as NumPy does (exponents past 127 too)", function()
    local e = hl.array({0, 1, 2, 5, 31, 127, 128, 200}, "int32")
    local want = {1, 3, 9, 243, 1264544299, -2088621909, -1970898431, -1426542431}   -- np.power(np.int32(3), e)
    local ok, r = pcall(hl.jit(function(k) return 3 ^ k end), e)
    assert(ok, tostring(r))
    assert.are.same(want, r:totable())
    assert.are.same(want, (3 ^ e):totable())
    local bases, exps = hl.array({0, 2, -1, -1, 1, 7}, "int32"), hl.array({128, 128, 129, 200, 300, 1000}, "int32")
    assert.are.same({0, 0, -1, 1, 1, 432069569}, hl.jit(hl.pow)(bases, exps):totable())
    assert.are.same({0, 0, -1, 1, 1, 432069569}, hl.pow(bases, exps):totable())
  end)
end)

describe("jit with Halide's autoscheduler", function()
  -- on the cpu even under HALUA_DEVICE=cuda: the autoscheduler schedules CPU pipelines
  local a = hl.reshape(hl.arange(64 * 48):astype("float32") / 1000, {64, 48}):to("cpu")
  local b = hl.reshape(hl.cos(hl.arange(48 * 32):astype("float32")), {48, 32}):to("cpu")
  local function f(p, q) return hl.sum(hl.tanh(hl.matmul(p, q) + 1), 2), hl.exp(p * 0.5) - p end
  it("schedule = \"auto\" gives the default schedule's results", function()
    local d1, d2 = hl.jit(f)(a, b)
    local s1, s2 = hl.jit(f, {schedule = "auto"})(a, b)
    assert.is_true(hl.max(hl.abs(d1 - s1)):item() < 1e-4)
    assert.is_true(hl.max(hl.abs(d2 - s2)):item() < 1e-6)
    -- and a gradient (reductions, broadcasts, matmuls) through it
    local loss = function(p) return hl.sum(hl.tanh(hl.matmul(p, b)) ^ 2) end
    local g1 = hl.jit(hl.grad(loss))(a)
    local g2 = hl.jit(hl.grad(loss), {schedule = "auto"})(a)
    assert.is_true(hl.max(hl.abs(g1 - g2)):item() < 1e-4)
  end)
  it("keeps the two schedules' pipelines apart in the cache", function()
    local j1, j2 = hl.jit(f), hl.jit(f, {schedule = "auto"})
    j1(a, b)
    j2(a, b)
    local s1, s2 = j1:lower(a, b):stmt(), j2:lower(a, b):stmt()
    assert.are_not.equal(s1, s2)
  end)
  it("rejects unknown schedules, cuda, and extern stages by name", function()
    local ok, err = pcall(hl.jit, f, {schedule = "fast"})
    assert.is_false(ok)
    assert.truthy(err:find('^halua: jit: schedule must be "default" or "auto"'))
    ok, err = pcall(hl.jit, f, {schedule = "auto", device = "cuda"})
    assert.is_false(ok)
    assert.truthy(err:find('^halua: jit: schedule "auto" schedules CPU pipelines'))
    ok, err = pcall(hl.jit(function(v) return hl.sort(v) * 2 end, {schedule = "auto"}), hl.ones({4}):to("cpu"))
    assert.is_false(ok)
    assert.truthy(err:find('schedule "auto" cannot schedule sort'), err)
  end)
end)

describe("jit compile time", function()
  -- CPU pipelines (also under HALUA_DEVICE=cuda): only they are cut into parts (hl_partition.h)
  local device
  setup(function() device = hl.default_device() hl.default_device("cpu") end)
  teardown(function() hl.default_device(device) end)
  local ffi = require "ffi"
  pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } hl_compile_ts; int clock_gettime(int, hl_compile_ts *);")
  local ts = ffi.new("hl_compile_ts")
  -- this thread's CPU time (CLOCK_THREAD_CPUTIME_ID): Halide compiles on the calling thread, and
  -- its CPU time does not depend on what else the machine runs (the suite runs specs side by side)
  local function now()
    ffi.C.clock_gettime(3, ts)
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
  end
  -- a constant of this run's own, so that the disk cache has never seen the pipelines: the
  -- compiles are cold on every run
  -- (1.0001 as a float32 always; the double's last bits, which the key holds, differ by run)
  local addr = tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 4096
  local salt = 1.0001 + (addr + (os.time() % 4096) * 4096) * 2.3e-16
  local function chain(n)
    return function(a)
      for i = 1, n do a = hl.tanh(a * salt + i * 1e-6) end
      return a
    end
  end
  local function compile_seconds(n, x)
    hl.cache_clear()
    local jf = hl.jit(chain(n))
    local t0 = now()
    jf:lower(x)
    return now() - t0, jf
  end

  it("grows about linearly with an unrolled body (400 rounds against 100)", function()
    local x = hl.ones({1000}) + 0
    compile_seconds(10, x)   -- the process's first pipeline builds Halide's runtime: not counted
    local t100 = compile_seconds(100, x)
    local t400, jf = compile_seconds(400, x)
    -- linear growth is 4x; measured 3.8x since a big program is cut into several pipelines (one
    -- pipeline: 6.6x, Halide's passes walking its nest of stages once per stage); the whole body
    -- inlined into one expression had grown as n^2 to n^3 (40 rounds: 5 s, 80 rounds: 53 s, 400
    -- rounds: not done in 9 minutes), 16x to 64x here
    assert.is_true(t400 / t100 < 5, string.format("100 rounds: %.2f s, 400 rounds: %.2f s", t100, t400))
    -- and the values are right: 400 rounds of tanh(a * salt + i * 1e-6) from 1, against a Lua loop
    local want = 1
    for i = 1, 400 do
      local v = want * salt + i * 1e-6
      want = (math.exp(2 * v) - 1) / (math.exp(2 * v) + 1)
    end
    local got = jf(x):totable()
    assert.are.equal(1000, #got)
    for _, i in ipairs {1, 500, 1000} do assert.is_true(math.abs(got[i] - want) < 1e-4, tostring(got[i]) .. " vs " .. want) end
  end)

  -- value_and_grad and an SGD step of a 64-wide tanh MLP, as a training step is jitted
  local function mlp_step(depth)
    local function loss(q, xb)
      local h = xb
      for i = 1, depth do h = hl.tanh(hl.matmul(h, q[i].w) + q[i].b * salt) end
      return (h * h):mean()
    end
    return function(q, xb)
      local l, g = hl.value_and_grad(loss)(q, xb)
      local r = {}
      for i = 1, depth do r[i] = {w = q[i].w - 0.01 * g[i].w, b = q[i].b - 0.01 * g[i].b} end
      return r, l
    end
  end
  local function mlp_params(depth)
    local p = {}
    for i = 1, depth do
      p[i] = {w = (hl.sin(hl.arange(64 * 64) * (0.37 + i)) * 0.2):reshape({64, 64}), b = hl.cos(hl.arange(64) * i) * 0.1}
    end
    return p
  end

  it("grows about linearly with depth (a 16-layer MLP's training step against 4 layers)", function()
    local xb = (hl.sin(hl.arange(32 * 64)) * 2):reshape({32, 64})
    local times = {}
    for _, depth in ipairs {4, 16} do
      hl.cache_clear()
      local jf, p = hl.jit(mlp_step(depth)), mlp_params(depth)
      local t0 = now()
      jf:lower(p, xb)
      times[depth] = now() - t0
      -- the cut program computes what the step computes op by op
      local r, l = jf(p, xb)
      local er, el = mlp_step(depth)(p, xb)
      assert.is_true(math.abs(l:item() - el:item()) <= 1e-6 * math.abs(el:item()) + 1e-9, l:item() .. " vs " .. el:item())
      for _, i in ipairs {1, depth} do
        assert.is_true(hl.max(hl.abs(r[i].w - er[i].w)):item() < 1e-6, "layer " .. i .. "'s weights")
        assert.is_true(hl.max(hl.abs(r[i].b - er[i].b)):item() < 1e-6, "layer " .. i .. "'s biases")
      end
    end
    -- linear growth is 4x; one pipeline for the whole step measured 10x (16 layers: 17.6 s of
    -- thread time), cut into pipelines of at most 24 nodes 4.3x (4.1 s), cut where the step
    -- repeats itself and each distinct pipeline compiled once 1.6x (hl_partition.h)
    assert.is_true(times[16] / times[4] < 5, string.format("depth 4: %.2f s, depth 16: %.2f s", times[4], times[16]))
  end)
end)

describe("jit: a big program as several pipelines", function()
  -- CPU pipelines (also under HALUA_DEVICE=cuda): only they are cut into parts (hl_partition.h)
  local device
  setup(function() device = hl.default_device() hl.default_device("cpu") end)
  teardown(function() hl.default_device(device) end)
  -- 60 rounds of a value used twice: well past one pipeline's 24 nodes
  local function rounds(a, n)
    local b = a
    for i = 1, n do
      local t = hl.tanh(a * 0.9 + b * 0.1 + i * 0.01)
      a, b = t, a
    end
    return a, b
  end
  local function lua_rounds(x, n)
    local a, b = x, x
    for i = 1, n do
      local v = a * 0.9 + b * 0.1 + i * 0.01
      a, b = math.tanh(v), a
    end
    return a, b
  end

  it("runs its pipelines one after another, each part's results feeding the next", function()
    local x = hl.linspace(-2, 2, 37)
    local jf = hl.jit(function(a) local p, q = rounds(a, 60) return {p = p, q = q, s = hl.sum(p), a = a} end)
    local out = jf(x)
    local text = jf:lower(x):stmt()
    local n = tonumber(text:match("# pipeline 1 of (%d+)\n"))
    assert.is_true(n ~= nil and n >= 5, "the loop nests of several pipelines:\n" .. text:sub(1, 300))
    assert.truthy(text:find("# pipeline " .. n .. " of " .. n .. "\n", 1, true))
    -- the rounds' parts are one program (their constants read from buffers): lowered once, the
    -- others name the pipeline whose loop nest they run
    local named = 0
    for k, p in text:gmatch("# pipeline (%d+) of %d+\n%(the program of pipeline (%d+), compiled once%)\n") do
      assert.is_true(tonumber(p) < tonumber(k), text:sub(1, 300))
      assert.truthy(text:match("# pipeline " .. p .. " of %d+\nmodule name="), "pipeline " .. p .. "'s loop nest")
      named = named + 1
    end
    assert.is_true(named >= n - 4, named .. " of " .. n .. " parts named another's program")
    local xs, sum = x:totable(), 0
    for i, v in ipairs(xs) do
      local p, q = lua_rounds(v, 60)
      assert.is_true(math.abs(out.p[i]:item() - p) < 1e-5 and math.abs(out.q[i]:item() - q) < 1e-5, i .. ": " .. out.p[i]:item() .. " vs " .. p)
      sum = sum + p
    end
    assert.is_true(math.abs(out.s:item() - sum) < 1e-4, out.s:item() .. " vs " .. sum)
    assert.are.same(xs, out.a:totable())   -- an argument returned as it is
  end)

  it("holds a compiled loop among its parts (then its pipelines are JIT-compiled)", function()
    local x = hl.linspace(-1, 1, 9)
    local jf = hl.jit(function(a)
      local p = rounds(a, 30)
      p = hl.fori_loop(0, 3, function(i, c) return c * 0.5 + i end, p)
      return rounds(p, 30)
    end)
    local got = jf(x):totable()
    for i, v in ipairs(x:totable()) do
      local p = lua_rounds(v, 30)
      for k = 0, 2 do p = p * 0.5 + k end
      local want = lua_rounds(p, 30)
      assert.is_true(math.abs(got[i] - want) < 1e-5, i .. ": " .. got[i] .. " vs " .. want)
    end
  end)
end)

-- a cast to the dtype a value already has is the value itself in the compiled pipeline (autodiff's
-- variables are such casts): no node, so no copy where the value must be a buffer (the matmul
-- kernel's operands)
describe("jit: casts to the same dtype", function()
  it("leave no node in the pipeline", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
      local hl = require "halua"
      local f = hl.jit(function(x) return hl.matmul(x:astype("float32"), x) end, {name = "samecast"})
      print(f(hl.array({{1, 2}, {3, 4}})))
    ]])
    f:close()
    local p = io.popen("HALUA_LOG_COMPILES=1 HALUA_CACHE_DIR=off luajit " .. script .. " 2>&1")
    local out = p:read("*a")
    p:close()
    os.remove(script)
    assert.truthy(out:find("compiled samecast in [%d.]+ ms %(2 nodes;"), out)
    assert.truthy(out:find("{{ 7.0, 10.0},", 1, true), out)
  end)
  it("give the same values as outputs, operands and gradients' variables", function()
    local f = hl.jit(function(x) return x:astype("float32"), x, x:astype("float32") * 2 end)
    local a, b, c = f(hl.array({1, 2, 3}))
    assert.are.same({1, 2, 3}, a:totable())
    assert.are.same({1, 2, 3}, b:totable())
    assert.are.same({2, 4, 6}, c:totable())
    local g = hl.jit(hl.grad(function(w, x) return hl.sum(hl.matmul(x, w) ^ 2) end))
    local w, x = hl.array({{1, 2}, {3, 4}, {5, 6}}), hl.array({{1, 0, 1}, {0, 1, 0}})
    -- d/dw sum((x w)^2) = 2 x^T (x w); x w = {{6, 8}, {3, 4}}
    assert.are.same({{12, 16}, {6, 8}, {12, 16}}, g(w, x):totable())
  end)
end)

describe("jit: many arrays in and out", function()
  it("a function of 260 arrays in and 260 out (a deep model's parameters and optimiser state as leaves)", function()
    -- (more than 256 results: pruning the graph once kept only the first 256, and unflatten failed)
    local params = {}
    for i = 1, 260 do params[i] = hl.full({i % 7 + 1}, i) end
    local f = hl.jit(function(t)
      local out = {}
      for i, p in ipairs(t) do out[i] = p * 3 end
      return out
    end)
    for _ = 1, 2 do   -- the second call runs the cached program
      local out = f(params)
      assert.are.equal(260, #out)
      for i = 1, 260 do
        assert.are.same({i % 7 + 1}, out[i].shape)
        assert.are.equal(3 * i, out[i][1]:item())
      end
    end
    -- and as 100 separate arguments
    local g = hl.jit(function(...)
      local s = hl.sum((...))
      for i = 2, select("#", ...) do s = s + hl.sum((select(i, ...))) end
      return s
    end)
    local want = 0
    for i = 1, 100 do want = want + i * (i % 7 + 1) end
    assert.are.equal(want, g(unpack(params, 1, 100)):item())
  end)

  it("more than core.max_program_arrays is an error before any tracing or compiling, naming the count and the fix", function()
    local n = hl.core.max_program_arrays + 1
    local one = hl.ones(1)
    local args = {}
    for i = 1, n do args[i] = one end
    local traced = false
    local f = hl.jit(function(t) traced = true; return hl.sum(t[1]) end)
    local ok, err = pcall(f, args)
    assert.is_false(ok)
    assert.is_false(traced)
    assert(err:find("^halua: jit: "), err)
    assert(err:find(string.format("called with %d arrays but a jitted function takes at most %d", n, n - 1), 1, true), err)
    assert(err:find("stack each layer's parameters", 1, true), err)
    assert.are.equal(1, f({one, one}):item())
  end)
end)

-- Every CPU program of several operations computes in IEEE arithmetic (hl_lower_ieee): float terms
-- do not cancel by algebra, and no comparison assumes its operands finite. The products Halide
-- computes itself (2-byte floats, the autoscheduler's) keep their fused multiply-adds, and until
-- 2026-11-27 made the whole program fast-math: x - x was 0 for an inf beside a float16 product
describe("IEEE arithmetic in jitted programs", function()
  local ieee = require "support.ieee_terms"
  local x, terms, check = ieee.x, ieee.terms, ieee.check
  local h = (hl.arange(6):reshape({2, 3}) * 0.25 - 0.5):astype("float16")
  local w = (hl.arange(6):reshape({3, 2}) * 0.5 + 1):astype("float16")

  it("beside a product Halide computes itself (float16), which keeps its value", function()
    local f = hl.jit(function(a, p, q) local r = {terms(a)}; r[5] = hl.matmul(p, q); return r end)
    local r = f(x, h, w)
    check(r, "jit with a float16 product")
    assert.is_true(hl.all(hl.eq(r[5], hl.matmul(h, w))):item())
  end)

  it("under schedule = \"auto\"", function()
    local f = hl.jit(function(a, p, q) local r = {terms(a)}; r[5] = hl.matmul(p:astype("float32"), q:astype("float32")); return r end,
                     {schedule = "auto"})
    local r = f(x, h, w)
    check(r, "schedule auto")
    local e = hl.matmul(h:astype("float32"), w:astype("float32"))
    assert.is_true(hl.max(hl.abs(r[5] - e)):item() < 1e-6)
  end)
end)

-- g's jitted result on x against its eager one (kernels of unknown sizes), within 1e-5 of the
-- largest magnitude
local function assert_jit_matches_eager(what, g, x)
  local got, want = hl.jit(g)(x), g(x)
  assert.are.same(want.shape, got.shape)
  local err, scale = hl.max(hl.abs(got - want)):item(), hl.max(hl.abs(want)):item()
  assert.is_true(err <= 1e-5 * (1 + scale), string.format("%s: %s, expected %s", what, tostring(got), tostring(want)))
end
-- the same, element for element (any dtype: bool included)
local function assert_jit_equals_eager(g, x)
  local got, want = hl.jit(g)(x), g(x)
  assert.are.same(want.shape, got.shape)
  assert.is_true(hl.all(hl.eq(got, want)):item(), tostring(got) .. "\nexpected\n" .. tostring(want))
end

describe("a guarded vector tail of one element reading a buffer the pipeline allocates", function()
  -- Halide 14's simplifier took a masked-off load past an allocation's end for code that never
  -- runs, and dropped the last block of a vectorised loop whose last block had one live lane: the
  -- first block ran twice (sum(var(x, 1)) of a 5x5 gave 2.78 against 1.74, found by
  -- fuzz/programs.lua). Widths of 4k + 1 and 8k + 1; 6 and 13 for contrast. Each result is
  -- compared with the eager one, which runs kernels of unknown sizes.
  -- sin(7i + 3j) + j / 2 at row i, column j (from 1): no two rows or columns alike
  local function rows(shape, dtype)
    local i = (hl.arange(shape[1]) + 1):reshape({shape[1], 1})
    local j = hl.arange(shape[2]) + 1
    return (hl.sin(i * 7 + j * 3) + j * 0.5):astype(dtype)
  end
  for _, sh in ipairs {{5, 5}, {4, 5}, {9, 5}, {5, 9}, {3, 17}, {6, 6}, {2, 13}} do
    it(string.format("[%d,%d]", sh[1], sh[2]), function()
      for _, dt in ipairs {"float32", "float64"} do
        local a = rows(sh, dt)
        for name, g in pairs {
          ["sum(var(x, 1))"] = function(x) return hl.sum(hl.var(x, {1})) end,
          ["prod(var(x, 1) + 1)"] = function(x) return hl.prod(hl.var(x, {1}) + 1) end,
          ["sum(d * d, 2), d = x - mean(x, 1)"] = function(x) local d = x - hl.mean(x, {1}, true) return hl.sum(d * d, {2}) end,
          ["max(v * v, 1), v = x * sum(x, 2)"] = function(x) local v = x * hl.sum(x, {2}, true) return hl.max(v * v, {1}) end,
        } do
          assert_jit_matches_eager(name .. " of " .. dt, g, a)
        end
      end
    end)
  end
  it("a float16 product of a nested sum", function()
    local e = rows({5, 5}, "float16")
    local b = rows({5, 3}, "float16")
    local g = function(x, y) return hl.matmul(hl.sum(x + hl.sum(x, {1}, true), {1}, true), y) end
    local got, want = hl.jit(g)(e, b):astype("float32"), g(e, b):astype("float32")
    assert.are.same({1, 3}, got.shape)
    local err, scale = hl.max(hl.abs(got - want)):item(), hl.max(hl.abs(want)):item()
    assert.is_true(err <= 2e-3 * scale, tostring(got) .. "\nexpected\n" .. tostring(want))
  end)
end)

describe("a row reduction computed per row, read by a guarded vector tail of one live lane", function()
  -- A value read twice (tanh of row sums, by a where) is computed row by row with the row
  -- reductions it reads (hl_row_groups.cpp); a row of w + 1 elements, w the vector's lanes, left
  -- its last element unwritten, garbage in the result (fuzz/programs.lua, seed 5302): the
  -- reduction's row, allocated without spare elements, met the Halide 14 fault bind_whole
  -- describes. Rows of 5, 9 and 17 (4, 8 and 16 lanes and one), 6 and 13 for contrast.
  for _, n in ipairs {5, 9, 17, 6, 13} do
    it(string.format("[4,%d,2]", n), function()
      local x = (hl.sin(hl.arange(4 * n * 2) * 0.37) * 0.5 + 0.7):reshape({4, n, 2})
      for _, red in ipairs {"sum", "prod", "max"} do
        for _, op in ipairs {"tanh", "exp", "log", "sin"} do
          assert_jit_matches_eager(op .. " of " .. red, function(u)
            local s = hl[red](u, -1)
            local v = hl[op](s)
            return hl.where(v, v, s)
          end, x)
        end
      end
    end)
  end
end)

describe("a strided read at a constant start: the imaginary parts of a buffer the pipeline allocates", function()
  -- With declared bounds the last vector of a stage shifts inwards to a constant start; Halide 14
  -- turned a stride-2 read there (the imaginary parts after the real ones) into an aligned load
  -- 16 bytes into the buffer, and the process crashed (imag(sum(u, 1)) of a complex [3, 5]).
  -- Mended in hl_codegen_mends.cpp; widths of 4k + 1 and 8k + 1, and 6 for contrast.
  for _, n in ipairs {5, 9, 13, 6} do
    it(string.format("[3,%d]", n), function()
      for _, dt in ipairs {"float32", "float64"} do
        local re = hl.sin(hl.arange(3 * n) * 0.7):reshape({3, n}):astype(dt)
        local im = hl.cos(hl.arange(3 * n) * 0.3):reshape({3, n}):astype(dt)
        local z = hl.complex(re, im)
        for name, g in pairs {
          ["imag(sum(u, 1))"] = function(u) return hl.imag(hl.sum(u, {1})) end,
          ["imag(sum(u * u, 1)) * 2"] = function(u) return hl.imag(hl.sum(u * u, {1})) * 2 end,
          ["real(s) + imag(s), s = sum(u, 1)"] = function(u) local s = hl.sum(u, {1}) return hl.real(s) + hl.imag(s) end,
        } do
          assert_jit_matches_eager(name .. " of " .. dt, g, z)
        end
      end
    end)
  end
end)

describe("a guarded vector of a flipped read, starting before the buffer", function()
  -- A reduction over the last axis of a [1, n] guards its last vector; reading a flipped input,
  -- that vector's masked-off lanes lie before the buffer's first element, and with declared
  -- bounds its start was a negative constant, on which Halide 14's code generator asserted
  -- ("compiling the pipeline failed: Internal Error ... base >= 0", found by fuzz/programs.lua).
  -- Mended in hl_codegen_mends.cpp; 4 of n = 3 to 9 are shorter than a vector.
  for _, n in ipairs {3, 4, 5, 7, 9} do
    it(string.format("[1,%d]", n), function()
      for _, dt in ipairs {"float32", "float64", "int32"} do
        local x = (hl.arange(n):reshape({1, n}) * 3 % 7 + 1):astype(dt)
        for name, g in pairs {
          ["sum(flip(x) * 2, 2)"] = function(u) return hl.sum(hl.flip(u, {-1}) * 2, 2) end,
          ["max(flip(x) / x, 2)"] = function(u) return hl.max(hl.flip(u, {-1}) / u, 2) end,
          ["logsumexp(flip(x) * 2, 2)"] = function(u) return hl.logsumexp(hl.flip(u, {-1}) * 2, 2, true) end,
        } do
          assert_jit_matches_eager(name .. " of " .. dt, g, x)
        end
      end
    end)
  end
end)

describe("a padded tile, whose gathered lanes are all one address", function()
  -- tile is a reshape of a broadcast; read through one flat index, the pad's clamped coordinates
  -- divided by the tile's extent put every lane of a vector at one address, and Halide 14's
  -- FlattenNestedRamps divided by zero: the process died of SIGFPE while compiling (found by
  -- fuzz/programs.lua, seed 5205). Reshapes now index by groups of axes (hl_lower.cpp).
  for _, case in ipairs {
    {shape = {2, 1}, reps = {2}, pad = {{1, 2}, {1, 1}}},
    {shape = {2, 1}, reps = {1, 3}, pad = {{0, 1}, {2, 0}}},
    {shape = {3, 2}, reps = {2, 2}, pad = {{1, 1}, {1, 1}}},
    {shape = {1, 3}, reps = {3, 1}, pad = {{2, 0}, {0, 2}}},
  } do
    it(string.format("[%d,%d] tiled by {%s}", case.shape[1], case.shape[2], table.concat(case.reps, ", ")), function()
      local a = hl.linspace(-1, 1, case.shape[1] * case.shape[2]):reshape(case.shape)
      for _, g in ipairs {
        function(x) return hl.pad(hl.gt(hl.tile(x, case.reps), 0), case.pad, 1) end,
        function(x) return hl.pad(hl.tile(x, case.reps), case.pad, 7) end,
        function(x) return hl.pad(hl["repeat"](x, 2, 2) * 2, case.pad, -1) end,
      } do
        assert_jit_equals_eager(g, a)
      end
    end)
  end
end)

describe("a transposed output whose inner axis has one element", function()
  -- [1, n] to [n, 1] of a materialised value (exp(a) used twice): the transposing tiles' loop
  -- nest was dropped by Halide 14's loop partitioning, and the output held uninitialised memory
  -- (found by fuzz/programs.lua); such a transpose keeps the elements' order and is not tiled
  for _, sh in ipairs {{1, 5}, {1, 1}, {1, 40}, {5, 1}} do
    it(string.format("[%d,%d]", sh[1], sh[2]), function()
      local a = hl.linspace(-1, 1, sh[1] * sh[2]):reshape(sh)
      for _, g in ipairs {
        function(x) local v = hl.exp(x) return (v * v).T end,
        function(x) local v = hl.log(x * 3 + 4) return hl.ge(v, v):astype("int32").T end,
        function(x) local v = hl.exp(x):astype("float64") return hl.transpose(v + v) end,
      } do
        assert_jit_equals_eager(g, a)
      end
    end)
  end
end)
