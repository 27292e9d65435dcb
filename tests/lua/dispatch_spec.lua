-- The dispatch fast paths: the eager ops' kernel memo (engine/runtime/hl_eager_memo.c), small
-- arrays' reused blocks (engine/core/hl_storage.c), Lua numbers' reused blocks and direct
-- broadcasts (hl_eager_scalar, engine/runtime/hl_eval.c), the memo's lane for elementwise ops on
-- contiguous operands (hl_eager_elemwise_lane) and jitted functions' call memo
-- (engine/lua/hl_lua_call.c). Each must give the value the slow path gives, whatever sequence of
-- signatures, strides, sizes and cache evictions comes.
local hl = require "halua"

local function close(got, want, tol)
  tol = tol or 1e-6
  assert.are.equal(#want, #got)
  for i = 1, #want do
    assert(math.abs(got[i] - want[i]) <= tol * math.max(1, math.abs(want[i])),
           string.format("element %d: %s, expected %s", i, tostring(got[i]), tostring(want[i])))
  end
end

local function flat(t, out)
  out = out or {}
  for _, v in ipairs(t) do
    if type(v) == "table" then flat(v, out) else out[#out + 1] = v end
  end
  return out
end

-- a separate process (cache settings of its own); returns its output
local function script_run(env, body)
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write("local hl = require 'halua'\n" .. body)
  f:close()
  local p = io.popen(env .. " luajit " .. script .. " 2>&1")
  local out = p:read("*a")
  p:close()
  os.remove(script)
  return out
end

describe("the eager kernel memo", function()
  it("gives each signature its own kernel: dtypes, ranks and strides in turn", function()
    local m = hl.array({{1, 2, 3}, {4, 5, 6}})                 -- float32, contiguous
    local t = m.T                                               -- a transposed view: strided
    local d = hl.array({{1, 2, 3}, {4, 5, 6}}, "float64")
    local i = hl.array({{1, 2, 3}, {4, 5, 6}}, "int32")
    for _ = 1, 3 do   -- the same sequence again: every one now from the memo
      close(flat((m + m):totable()), {2, 4, 6, 8, 10, 12})
      close(flat((t + t):totable()), {2, 8, 4, 10, 6, 12})
      close(flat((t * 1 + m.T):totable()), {2, 8, 4, 10, 6, 12})
      close(flat((d - 0.5):totable()), {0.5, 1.5, 2.5, 3.5, 4.5, 5.5}, 1e-15)
      assert.are.equal("float64", (d - 0.5).dtype)
      assert.are.same({{3, 4, 5}, {6, 7, 8}}, (i + 2):totable())
      assert.are.equal("int32", (i + 2).dtype)
      close(flat((m[1] * m[2]):totable()), {4, 10, 18})           -- rank 1 from rank 2 rows
      close(flat(hl.sum(m, 2):totable()), {6, 15})                 -- a reduction's attributes
      close(flat(hl.sum(m, 1):totable()), {5, 7, 9})
      close(flat(m:astype("int32"):astype("float64"):totable()), {1, 2, 3, 4, 5, 6})
    end
  end)

  it("counts its answers as cache hits", function()
    local a = hl.array({1, 2, 3})
    local _ = a + a
    _ = a * a
    _ = hl.exp(a)
    local h0 = hl.cache_info().hits
    for _ = 1, 50 do _ = a + a end
    assert.are.equal(h0 + 50, hl.cache_info().hits)
    -- the memo adds its hits to the cache's count in batches: exact for this thread at any count
    for _ = 1, 1000 do _ = a * a end
    assert.are.equal(h0 + 1050, hl.cache_info().hits)
    for _ = 1, 257 do _ = hl.exp(a) end
    assert.are.equal(h0 + 1050 + 257, hl.cache_info().hits)
  end)

  it("runs on after hl.cache_clear(), compiling or loading again", function()
    local a = hl.array({1, 2, 3})
    close((hl.exp(a) * 2):totable(), {2 * math.exp(1), 2 * math.exp(2), 2 * math.exp(3)}, 1e-6)
    hl.cache_clear()
    assert.are.equal(0, hl.cache_info().entries)
    close((hl.exp(a) * 2):totable(), {2 * math.exp(1), 2 * math.exp(2), 2 * math.exp(3)}, 1e-6)
    assert.is_true(hl.cache_info().entries >= 2)
  end)

  it("stays right while a tiny cache evicts the kernels it remembers", function()
    local out = script_run("HALUA_CACHE_DIR=off HALUA_CACHE_MEM_MB=1", [[
      local ops = {hl.exp, hl.tanh, hl.sin, hl.cos, hl.sqrt, hl.log}
      local ref = {math.exp, math.tanh, math.sin, math.cos, math.sqrt, math.log}
      local a = hl.array({0.5, 1.5, 2.5})
      for round = 1, 3 do
        for k, f in ipairs(ops) do
          local y = f(a):totable()
          for i, v in ipairs(y) do
            local want = ref[k](({0.5, 1.5, 2.5})[i])
            if math.abs(v - want) > 1e-5 then error(string.format("round %d op %d: %g, expected %g", round, k, v, want)) end
          end
        end
      end
      print("evictions", hl.cache_info().evictions)
    ]])
    local ev = out:match("evictions\t(%d+)")
    assert(ev, out)
    assert.is_true(tonumber(ev) > 0, "the bound evicted nothing: " .. out)
  end)

  it("keeps values apart on many threads' worth of reuse: a long loop of small results", function()
    local x = hl.zeros({8}) + 0
    for i = 1, 20000 do x = x * 0.5 + i end
    -- x_n = x_{n-1} / 2 + n converges to 2n - 2 + 2^-k terms: at n = 20000, 39998 (float32)
    close(x:totable(), {39998, 39998, 39998, 39998, 39998, 39998, 39998, 39998}, 1e-6)
  end)
end)

describe("the engine's count of its arrays' bytes", function()
  it("is exact for the arrays this thread made and freed, small and large", function()
    -- (counted per thread and added to the process's count in steps: hl_storage.c)
    collectgarbage()
    collectgarbage()
    local h0 = hl.core.heap_bytes()
    local keep = {}
    for k = 1, 20 do keep[k] = hl.zeros({k}) + 1 end              -- 4 to 80 bytes each
    keep[21] = hl.zeros({100000}) + 1                              -- 400,000 bytes
    collectgarbage()
    collectgarbage()
    assert.are.equal(h0 + 4 * 210 + 400000, hl.core.heap_bytes())
    keep[21] = nil
    collectgarbage()
    collectgarbage()
    assert.are.equal(h0 + 4 * 210, hl.core.heap_bytes())
    keep = nil
    collectgarbage()
    collectgarbage()
    assert.are.equal(h0, hl.core.heap_bytes())
  end)
end)

describe("small arrays' blocks", function()
  it("hold their own values at every size around the small-block limit", function()
    -- results of 1..1100 elements (float32 up to 4.3 KB, float64 to 8.6 KB) made, dropped and made
    -- again: a reused block must never show another array's elements
    for _, dtype in ipairs({"float32", "float64"}) do
      for _, n in ipairs({1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 500, 1000, 1007, 1008, 1009, 1024, 1100}) do
        for round = 1, 2 do
          local a = hl.arange(n):astype(dtype)
          local y = (a * 2 + round):totable()
          assert.are.equal(n, #y)
          for i = 1, n do
            if y[i] ~= 2 * (i - 1) + round then
              error(string.format("%s n=%d round %d: element %d is %s", dtype, n, round, i, tostring(y[i])))
            end
          end
          collectgarbage()
        end
      end
    end
  end)
end)

describe("Lua numbers in eager ops", function()
  it("take each operand's dtype, in every position, with no value leaking between ops", function()
    local f = hl.array({1, 2, 3}, "float32")
    local i = hl.array({7, -8, 9}, "int32")
    local u = hl.array({250, 3, 4}, "uint8")
    local h = hl.array({1.5, 2, 3}, "float16")
    local d = hl.array({1, 2, 3}, "float64")
    local results = {
      {f * 2, {2, 4, 6}}, {2 - f, {1, 0, -1}}, {i * 3, {21, -24, 27}}, {hl.floor_divide(10, i), {1, -2, 1}}, {hl.mod(i, 4), {3, 0, 1}},
      {u + 10, {4, 13, 14}},   -- uint8 wraps, as NumPy's
      {h * 0.5, {0.75, 1, 1.5}}, {d / 3, {1 / 3, 2 / 3, 1}}, {f ^ 0.5, {1, math.sqrt(2), math.sqrt(3)}},
      {hl.where(hl.gt(f, 1.5), f, -1), {-1, 2, 3}}, {hl.where(true, 5, f), {5, 5, 5}}, {hl.where(hl.gt(f, 2), 0, 1), {1, 1, 0}},
      {hl.clip(f, 1.5, 2.5), {1.5, 2, 2.5}}, {hl.eq(f, 2), {false, true, false}}, {hl.gt(i, 0), {true, false, true}},
      {hl.maximum(0, i), {7, 0, 9}},
    }
    -- every result still holds its own values after the others were made (the numbers' blocks
    -- were rewritten by each later op)
    for n, r in ipairs(results) do
      local got = r[1]:totable()
      for k = 1, 3 do
        local want = r[2][k]
        if type(want) == "boolean" then assert.are.equal(want, got[k], "result " .. n)
        else assert(math.abs(got[k] - want) <= 1e-3 * math.max(1, math.abs(want)), string.format("result %d element %d: %s, expected %s", n, k, tostring(got[k]), tostring(want))) end
      end
    end
    assert.are.equal("int32", (i * 3).dtype)
    assert.are.equal("float32", (i * 0.5).dtype)
    assert.are.equal("uint8", (u + 10).dtype)
  end)
  it("give the same values under jit, grad and vmap, and to complex and broadcast operands", function()
    local x = hl.array({{1, 2, 3}, {4, 5, 6}}, "float32")
    local row = hl.array({10, 20, 30}, "float32")
    local eager = (x * 2 + row - 1):totable()
    local jitted = hl.jit(function(a, r) return a * 2 + r - 1 end)(x, row):totable()
    close(flat(jitted), flat(eager))
    close(flat(eager), {11, 23, 35, 17, 29, 41})
    local g = hl.grad(function(a) return hl.sum(a * 3 + 1) end)(x):totable()
    close(flat(g), {3, 3, 3, 3, 3, 3})
    local v = hl.vmap(function(r) return r * 2 + 1 end)(x):totable()
    close(flat(v), {3, 5, 7, 9, 11, 13})
    local z = hl.array({1, 2}, "complex64") * 2 + 1
    close(flat(hl.real(z):totable()), {3, 5})
    -- an eager tape (grad without jit records the op) keeps the number's value
    local val, dr = hl.value_and_grad(function(a) local y = a * 4; local w = a * 5; return hl.sum(y + w) end)(row)
    assert.are.equal(540, val:item())
    close(dr:totable(), {9, 9, 9})
  end)
  it("give the general path's values and dtypes on the lane, in every dtype, position and size", function()
    -- contiguous operands take the lane with the number viewed in place (hl_frontend.c,
    -- plain_operands); the same op on a strided view takes the general path: they must agree
    -- element for element, for numbers that keep the dtype and numbers that change it
    local shapes = {{0}, {1}, {5}, {2, 3}, {0, 3}}
    local numbers = {2, -3, 0.5, 300, 1e10, -0.0, 1 / 0, 0 / 0}
    for _, dt in ipairs({"float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8", "bool"}) do
      for _, shape in ipairs(shapes) do
        local n = 1
        for _, e in ipairs(shape) do n = n * e end
        local vals = {}
        for k = 1, n do vals[k] = (k * 7) % 11 - (dt == "uint8" and 0 or 4) end
        local x = hl.reshape(hl.array(vals, dt), shape)
        local strided = hl.transpose(hl.transpose(x) + 0)   -- the same values, a strided view
        if #shape == 1 and n > 0 then   -- every other element of a twice as long array
          local twice = {}
          for k = 1, n do twice[2 * k - 1], twice[2 * k] = vals[k], 99 end
          strided = hl.array(twice, dt)[{{1, 2 * n - 1, 2}}]
        end
        for _, v in ipairs(numbers) do
          local cases = {
            {"x * v", function(a) return a * v end}, {"v - x", function(a) return v - a end},
            {"x + v", function(a) return a + v end}, {"max(v, x)", function(a) return hl.maximum(v, a) end},
          }
          for _, c in ipairs(cases) do
            local what = string.format("%s, %s, shape {%s}, v = %s", c[1], dt, table.concat(shape, ","), tostring(v))
            local ok1, fast = pcall(c[2], x)
            local ok2, general = pcall(c[2], strided)
            assert.are.equal(ok2, ok1, what)
            if ok1 then
              assert.are.equal(general.dtype, fast.dtype, what)
              assert.are.same(general.shape, fast.shape, what)
              local g, f = flat(general:totable()), flat(fast:totable())
              for k = 1, #g do
                -- (NaN compares unequal: both NaN is agreement; -0.0 against 0.0 is told apart by 1/x)
                local same = g[k] == f[k] and (g[k] ~= 0 or 1 / g[k] == 1 / f[k]) or (g[k] ~= g[k] and f[k] ~= f[k])
                assert(same, string.format("%s element %d: %s, expected %s", what, k, tostring(f[k]), tostring(g[k])))
              end
            end
          end
        end
      end
    end
  end)
  it("keep a long loop of new numbers right (the reused blocks rewritten every op)", function()
    local x = hl.zeros({8}) + 0
    for n = 1, 5000 do x = x * 0.5 + n * 0.25 end
    -- x_n = x_{n-1} / 2 + n / 4 tends to n / 2 - 1 / 2: at n = 5000, 2499.5
    close(x:totable(), {2499.5, 2499.5, 2499.5, 2499.5, 2499.5, 2499.5, 2499.5, 2499.5}, 1e-5)
  end)
end)

describe("the eager lane (contiguous or one-value operands, one rank-1 kernel)", function()
  -- the same op on the same values through the lane (contiguous operands) and through the general
  -- path (transposes of transposed copies: strided views), which must agree element for element
  it("gives the general path's values and dtypes for unary, binary and three-operand ops in every dtype", function()
    for _, dt in ipairs({"float32", "float64", "int32", "int64", "uint8", "float16"}) do
      local a = hl.array({{1, 2, 3}, {4, 5, 6}}, dt)
      local b = hl.array({{6, 5, 4}, {3, 2, 1}}, dt)
      local at, bt = hl.transpose(hl.transpose(a) + 0), hl.transpose(hl.transpose(b) + 0)   -- strided views
      local cases = {
        {function(x, y) return x + y end}, {function(x, y) return x - y end}, {function(x, y) return x * y end},
        {function(x, y) return hl.maximum(x, y) end}, {function(x, y) return hl.lt(x, y) end},
        {function(x, y) return hl.where(hl.gt(x, y), x, y) end}, {function(x) return -x end},
        {function(x) return hl.abs(x) end}, {function(x, y) return x * 2 + y end}, {function(x) return hl.sqrt(x) end},
      }
      for n, c in ipairs(cases) do
        local fast, general = c[1](a, b), c[1](at, bt)
        assert.are.equal(general.dtype, fast.dtype, dt .. " case " .. n)
        assert.are.same(general.shape, fast.shape, dt .. " case " .. n)
        assert.are.same(general:totable(), fast:totable(), dt .. " case " .. n)
      end
    end
  end)
  it("takes offset rows, one-element arrays, 0-d arrays broadcast and empty arrays", function()
    local m = hl.array({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
    close((m[2] + m[3]):totable(), {11, 13, 15})             -- rows at an offset in one block
    close((m[3] * hl.array(2)):totable(), {14, 16, 18})     -- a 0-d array: one value broadcast
    close((hl.array(3) - m[1]):totable(), {2, 1, 0})
    close((hl.array({5}) * hl.array({4})):totable(), {20})
    assert.are.equal(12, (hl.array(3) * hl.array(4)):item())
    local e = hl.zeros({0, 3}) + hl.zeros({0, 3})
    assert.are.same({0, 3}, e.shape)
    close((m[2]:reshape({3, 1}) + m[1]):totable()[3], {7, 8, 9})   -- a row broadcast: the general path
  end)
  it("keeps an op's errors, with the operands' own shapes", function()
    local ok, err = pcall(function() return hl.array({{1, 2}, {3, 4}}) + hl.array({{1, 2, 3}, {4, 5, 6}}) end)
    assert.is_false(ok)
    assert.matches("halua: add: cannot broadcast shapes %[2,2%] and %[2,3%]", err)
    ok, err = pcall(function() return hl.floor_divide(hl.array({1, 2}, "complex64"), hl.array({1, 2}, "complex64")) end)
    assert.is_false(ok)
    assert.matches("halua: floor_divide: complex64 is not supported yet", err)
  end)
end)

describe("the jit call memo", function()
  it("runs the program of the matching signature among many shapes, in any order", function()
    local calls = 0
    local f = hl.jit(function(x, y) calls = calls + 1; return x * 2 + y end)
    local shapes = {{3}, {5}, {2, 2}, {4}, {1}, {6}, {3}}   -- more than the memo keeps (4)
    for round = 1, 3 do
      for _, s in ipairs(shapes) do
        local x, y = hl.ones(s) + round, hl.ones(s)
        local got = flat({(f(x, y)):totable()})
        local n = 1
        for _, e in ipairs(s) do n = n * e end
        local want = {}
        for i = 1, n do want[i] = 2 * (1 + round) + 1 end
        close(got, want)
      end
    end
    assert.are.equal(6, calls)   -- one trace per distinct signature, never again
  end)

  it("tells dtypes and devices apart", function()
    local f = hl.jit(function(x) return x + 1 end)
    assert.are.equal("float32", f(hl.array({1, 2})).dtype)
    assert.are.equal("float64", f(hl.array({1, 2}, "float64")).dtype)
    assert.are.equal("int32", f(hl.array({1, 2}, "int32")).dtype)
    assert.are.same({2, 3}, f(hl.array({1, 2}, "int32")):totable())
  end)

  it("leaves numbers, tables, static arguments and non-array results to the general path", function()
    local f = hl.jit(function(x, s) return x * s end)
    close(f(hl.array({1, 2}), 3):totable(), {3, 6})
    close(f(hl.array({1, 2}), 4):totable(), {4, 8})
    close(f(hl.array({1, 2}), hl.array(5)):totable(), {5, 10})
    local g = hl.jit(function(p) return {a = p.a + p.b} end)
    for k = 1, 3 do close(g({a = hl.array({k}), b = hl.array({1})}).a:totable(), {k + 1}) end
    local h = hl.jit(function(x, n) return x + n end, {static_argnums = {2}})
    for k = 1, 3 do close(h(hl.array({1}), k):totable(), {1 + k}) end
    local two = hl.jit(function(x) return x + 1, 7 end)   -- a constant result: not a plain call
    for _ = 1, 3 do
      local y, c = two(hl.array({1}))
      close(y:totable(), {2})
      assert.are.equal(7, c)
    end
  end)

  it("lets an autodiff tape record the call, and jit inline it", function()
    local f = hl.jit(function(x) return hl.sin(x) * x end)
    local x = hl.array({0.3, 1.1})
    f(x)   -- the memo now knows this signature
    local g = hl.grad(function(v) return hl.sum(f(v)) end)(x)
    close(g:totable(), {math.cos(0.3) * 0.3 + math.sin(0.3), math.cos(1.1) * 1.1 + math.sin(1.1)}, 1e-5)
    local outer = hl.jit(function(v) return f(v) + 1 end)
    close(outer(x):totable(), {math.sin(0.3) * 0.3 + 1, math.sin(1.1) * 1.1 + 1}, 1e-6)
  end)

  it("keeps errors as they were", function()
    local f = hl.jit(function(x, y) return x + y end)
    f(hl.ones({3}), hl.ones({3}))
    local ok, err = pcall(f, hl.ones({3}), hl.ones({4}))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("halua: add: ", 1, true), err)
    ok, err = pcall(f, hl.ones({3}), "x")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("halua:", 1, true), err)
  end)
end)

describe("the eager memo and the cache's bound", function()
  it("keeps a kernel it answers for recent in the cache: the hot one is never the one evicted", function()
    -- each round brings a new kernel (a new unary op) and then uses `add` 100 times, all from the
    -- memo: the cache, which evicts the least recently used, must still see `add` as recent
    local out = script_run("HALUA_CACHE_DIR=off HALUA_CACHE_MEM_MB=3 HALUA_LOG_COMPILES=1", [[
      local ops = {hl.exp, hl.tanh, hl.sin, hl.cos, hl.sqrt, hl.log, hl.abs, hl.floor, hl.ceil, hl.sign}
      local a = hl.array({0.5, 1.5, 2.5})
      local y
      for _, f in ipairs(ops) do
        y = f(a)
        for _ = 1, 100 do y = a + a end
      end
      local info = hl.cache_info()
      print("done", info.evictions, y:totable()[3])
    ]])
    local ev, last = out:match("done\t(%d+)\t([%d.]+)")
    assert(ev, out)
    assert.is_true(tonumber(ev) > 0, "the bound evicted nothing:\n" .. out)
    assert.are.equal(5, tonumber(last))
    local adds = 0
    for _ in out:gmatch("compiled add ") do adds = adds + 1 end
    assert.are.equal(1, adds, out)
  end)
end)

describe("the jit pytree path", function()
  -- f's results, by value, as a flat list in tree order (to compare jitted and plain calls)
  local tree = require "halua.tree"
  local function values(...)
    local out = {}
    for _, l in ipairs(tree.leaves({...})) do
      local v = type(l) == "number" and l or l:totable()
      if type(v) == "number" then out[#out + 1] = v else flat(v, out) end
    end
    return out
  end
  local function f(p, x)
    local y = x * p.a
    if p.b then y = y + p.b end
    if p.list then for i, v in ipairs(p.list) do y = y + v * i end end
    return {y = y, s = hl.sum(y), k = 3}, y * 2
  end

  it("gives the plain function's values over changing structures, keys and shapes", function()
    local jf = hl.jit(f)
    local function arr(v, n) local t = {} for i = 1, n do t[i] = v + i end return hl.array(t) end
    local cases = {}
    for _, n in ipairs({2, 3, 2, 5, 1, 3, 4, 2}) do   -- more shapes than the memo keeps
      cases[#cases + 1] = {{a = arr(1, n), b = arr(2, n)}, arr(0, n)}
    end
    cases[#cases + 1] = {{a = arr(1, 2)}, arr(0, 2)}                              -- a key fewer
    cases[#cases + 1] = {{a = arr(1, 2), b = arr(2, 2), list = {arr(3, 2), arr(4, 2)}}, arr(0, 2)}
    cases[#cases + 1] = {{a = arr(1, 2), b = arr(2, 2), list = {arr(3, 2)}}, arr(0, 2)}   -- shorter list
    cases[#cases + 1] = {{a = arr(1, 2), c = arr(2, 2)}, arr(0, 2)}               -- another key, same count
    cases[#cases + 1] = {{a = arr(1, 2), b = 2.5}, arr(0, 2)}                      -- a number leaf
    cases[#cases + 1] = {{a = arr(1, 2), b = arr(2, 2)}, arr(0, 2)}
    for round = 1, 2 do
      for c, args in ipairs(cases) do
        local got, want = values(jf(args[1], args[2])), values(f(args[1], args[2]))
        assert.are.equal(#want, #got, "case " .. c .. " round " .. round)
        close(got, want)
      end
    end
    local r = jf({a = arr(1, 2), b = arr(2, 2)}, arr(0, 2))
    assert.are.equal(3, r.k)   -- a constant result stays a number
  end)

  it("takes a tree's leaves by a def (hl.tree.match) as tree.flatten orders them, or nil", function()
    local _, def = hl.tree.flatten({1, {2, 3}, b = {d = 4, c = 5}, a = 6})
    local t = {10, {20, 30}, b = {d = 40, c = 50}, a = 60}
    local want = hl.tree.flatten(t)
    assert.are.same(want, hl.tree.match(def, t))
    assert.are.same({10, 20, 30, 60, 50, 40}, hl.tree.match(def, t))
    local out = {"x"}
    assert.are.equal(out, hl.tree.match(def, t, out))
    assert.are.same({"x", 10, 20, 30, 60, 50, 40}, out)
    for _, other in ipairs({
      {10, {20}, b = {d = 40, c = 50}, a = 60},               -- a shorter list
      {10, {20, 30}, b = {d = 40, e = 50}, a = 60},           -- another key, same count
      {10, {20, 30}, b = {d = 40, c = 50}, a = 60, z = 1},    -- a key more
      {10, {20, 30}, b = {d = 40, c = {50}}, a = 60},         -- a table where a leaf was
      {10, 20, b = {d = 40, c = 50}, a = 60},                 -- a leaf where a table was
      {10, {20, 30}, b = {d = 40}, a = 60},                   -- a key fewer
    }) do
      local kept = {"x"}
      assert.is_nil(hl.tree.match(def, other, kept))
      assert.are.same({"x"}, kept)   -- out as it was
    end
  end)

  it("inlines under an outer jit and records under an autodiff tape", function()
    local jf = hl.jit(function(p) return hl.sum(p.w * p.w) end)
    local p = {w = hl.array({1, 2, 3})}
    assert.are.equal(14, jf(p):item())   -- the pytree path now knows this structure
    local outer = hl.jit(function(q) return jf(q) + 1 end)
    assert.are.equal(15, outer(p):item())
    local g = hl.grad(function(q) return jf(q) end)(p)
    assert.are.same({2, 4, 6}, g.w:totable())
  end)

  it("keeps errors as they were", function()
    local jf = hl.jit(function(p) return p.a + p.b end)
    jf({a = hl.ones({3}), b = hl.ones({3})})
    local ok, err = pcall(jf, {a = hl.ones({3}), b = hl.ones({4})})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("halua: add: ", 1, true), err)
    ok, err = pcall(jf, {a = hl.ones({3}), b = function() end})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("halua: jit: argument 1 holds a function leaf", 1, true), err)
  end)
end)
