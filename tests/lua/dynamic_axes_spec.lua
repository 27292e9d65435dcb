-- hl.jit(f, {dynamic_axes = ...}): one program for every size of the named axes. Every result of
-- a polymorphic function is compared with the same function run eagerly (or jitted without
-- dynamic_axes) at several sizes, 1, 2, odd, even and 1000 among them; "one compile" is counted
-- by the signatures the polymorphic program serves (misses, below) around the jitted calls (inputs are made beforehand, since
-- eager ops compile kernels of their own); what HALUA_LOG_COMPILES says and the disk cache are
-- checked in child processes.
local hl = require "halua"

local root = debug.getinfo(1, "S").source:match("^@(.*/)tests/lua/") or "./"

-- The cases here run on the host, also under scripts/test-gpu (HALUA_DEVICE=cuda): some test
-- what only CPU programs do (parts compiled apart, the autoscheduler); "on a GPU" runs CUDA ones.
hl.default_device("cpu")

-- ---- helpers ----

local function J(f, axes, opts)
  opts = opts or {}
  opts.dynamic_axes = axes
  return hl.jit(f, opts)
end

-- the message of the error fn raises (fails the test when it raises none)
local function err(fn, ...)
  local ok, e = pcall(fn, ...)
  assert(not ok, "expected an error, got none")
  return tostring(e)
end

local function has(msg, words)
  assert(msg:find(words, 1, true), "expected the message to contain:\n  " .. words .. "\ngot:\n  " .. msg)
end

-- deterministic inputs: sin of a ramp, of shape {n, m, ...}
local function data(shape, phase)
  local size = 1
  for _, d in ipairs(shape) do size = size * d end
  return hl.reshape(hl.sin(hl.arange(size):astype("float32") * 0.37 + (phase or 0)), shape)
end

local function flat(a)
  if a.size == 0 then return {} end
  return hl.reshape(a, {a.size}):astype("float64"):totable()
end

-- a and b (arrays or trees of them) have one shape and values within tol
local function close(a, b, tol, where)
  tol = tol or 1e-5
  where = where or ""
  if type(a) == "table" and not hl.core.is_array(a) then
    assert(type(b) == "table" and not hl.core.is_array(b), where .. ": a table against a " .. type(b))
    for k, v in pairs(b) do close(a[k], v, tol, where .. "." .. tostring(k)) end
    for k in pairs(a) do assert(b[k] ~= nil, where .. ": extra key " .. tostring(k)) end
    return
  end
  assert(hl.core.is_array(a) and hl.core.is_array(b), where .. ": expected two arrays")
  assert.are.equal(table.concat(b.shape, ","), table.concat(a.shape, ","), where .. ": shape")
  assert.are.equal(b.dtype, a.dtype, where .. ": dtype")
  local x, y = flat(a), flat(b)
  for i = 1, #y do
    local d = math.abs(x[i] - y[i])
    if not (d <= tol * (1 + math.abs(y[i])) or (x[i] ~= x[i] and y[i] ~= y[i])) then
      error(string.format("%s: element %d is %.9g, expected %.9g", where, i, x[i], y[i]), 2)
    end
  end
end

-- The programs the calls fn makes compile for their own sizes: the signatures of the jitted
-- function pf that its polymorphic program does not serve, and polymorphic programs past the first
-- (tostring(pf) says "N signatures traced, S of them by K polymorphic programs"). 0 when one
-- program served every call. (Cache misses cannot tell: a call specialised to its size may find an
-- identical program in the cache, made for another function; and every new size traces once, at
-- its own sizes, to check the polymorphic program against it, without compiling.)
local function programs_of(pf)
  local s = tostring(pf)
  local n = tonumber(s:match("(%d+) signatures? traced")) or 0
  local served, k = s:match("(%d+) of them by (%d+) polymorphic")
  return n - (tonumber(served) or 0), tonumber(k) or 0
end
local function misses(fn, pf)
  local a0, k0 = programs_of(pf)
  fn()
  local a1, k1 = programs_of(pf)
  return (a1 - a0) + math.max(0, k1 - math.max(k0, 1))
end

-- f with dynamic_axes against f run eagerly, at each size n of `sizes` (inputs made by
-- make(n)); returns the number of programs the polymorphic calls after the first compiled (0:
-- one compile served them all; the first call may take more than one, as a program may run a
-- kernel of its own, a matmul say)
local function against_eager(f, axes, sizes, make, tol)
  local pf = J(f, axes)
  local inputs = {}
  for i, n in ipairs(sizes) do inputs[i] = {make(n)} end
  local got = {}
  got[1] = {pf(unpack(inputs[1]))}
  local m = misses(function()
    for i = 2, #sizes do got[i] = {pf(unpack(inputs[i]))} end
  end, pf)
  for i, n in ipairs(sizes) do
    local want = {f(unpack(inputs[i]))}
    assert.are.equal(#want, #got[i])
    for r = 1, #want do close(got[i][r], want[r], tol, "size " .. n .. " result " .. r) end
  end
  return m
end

-- f with its complex result as its two real parts (close compares real arrays)
local function parts(f) return function(...) local z = f(...) return {hl.real(z), hl.imag(z)} end end

-- ---- child processes (HALUA_LOG_COMPILES, the disk cache) ----

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("*a")
  f:close()
  return s
end

-- runs script (Lua text) in a fresh luajit with env set; its stdout, stderr and exit status, and
-- the table it printed after "RESULT "
local function child(script, env)
  local base = os.tmpname()
  local f = assert(io.open(base .. ".lua", "w"))
  f:write(script)
  f:close()
  local set = {}
  for k, v in pairs(env) do set[#set + 1] = k .. "=" .. q(v) end
  os.execute(string.format("(cd %s && env -u HALUA_DEVICE -u HALUA_QUIET %s luajit %s > %s 2> %s; echo $? > %s)", q(root),
    table.concat(set, " "), q(base .. ".lua"), q(base .. ".out"), q(base .. ".err"), q(base .. ".rc")))
  local r = {out = slurp(base .. ".out"), err = slurp(base .. ".err"), rc = tonumber(slurp(base .. ".rc"):match("%d+"))}
  for _, ext in ipairs {"", ".lua", ".out", ".err", ".rc"} do os.remove(base .. ext) end
  local chunk = r.out:match("RESULT (.*)$")
  r.result = chunk and loadstring(chunk)()
  r.text = "exit status " .. tostring(r.rc) .. "\n--- stdout:\n" .. r.out .. "--- stderr:\n" .. r.err
  assert(r.rc == 0 and type(r.result) == "table", "the child failed:\n" .. r.text)
  return r
end

local function count_lines(text, words)
  local n = 0
  for l in (text .. "\n"):gmatch("(.-)\n") do
    if l:find(words, 1, true) then n = n + 1 end
  end
  return n
end

-- an MLP: params of static shape, a batch axis that is dynamic
local function mlp_params(nin, nhid, nout)
  return {w1 = data({nin, nhid}, 0.1) * 0.5, b1 = data({nhid}, 0.2) * 0.1,
          w2 = data({nhid, nout}, 0.3) * 0.5, b2 = data({nout}, 0.4) * 0.1}
end
local function mlp(p, x) return hl.matmul(hl.tanh(hl.matmul(x, p.w1) + p.b1), p.w2) + p.b2 end
-- softmax cross-entropy against one-hot targets, the mean over the batch
local function mlp_loss(p, x, y) return -hl.mean(hl.sum(hl.nn.log_softmax(mlp(p, x)) * y, 2)) end
-- one-hot rows (class (i mod k) + 1 for row i), made eagerly
local function onehot(n, k)
  local rows = {}
  for i = 1, n do
    local r = {}
    for j = 1, k do r[j] = (j == (i - 1) % k + 1) and 1 or 0 end
    rows[i] = r
  end
  return hl.array(rows, "float32")
end

-- ==================================================================================

describe("dynamic_axes: option validation", function()
  local id = function(x) return x end
  it("refuses what is not a list of axes or of per-argument lists", function()
    has(err(hl.jit, id, {dynamic_axes = 1}),
        "halua: jit: dynamic_axes must be a list of axes such as {1}, or one list per argument such as {{1}, {}}, got a number")
    has(err(hl.jit, id, {dynamic_axes = "a"}),
        "halua: jit: dynamic_axes must be a list of axes such as {1}, or one list per argument such as {{1}, {}}, got a string")
    has(err(hl.jit, id, {dynamic_axes = {0}}), "halua: jit: dynamic_axes must hold 1-based axis numbers, got 0")
    has(err(hl.jit, id, {dynamic_axes = {1.5}}), "halua: jit: dynamic_axes must hold 1-based axis numbers, got 1.5")
    has(err(hl.jit, id, {dynamic_axes = {-1}}), "halua: jit: dynamic_axes must hold 1-based axis numbers, got -1")
    has(err(hl.jit, id, {dynamic_axes = {{"a"}}}), "halua: jit: dynamic_axes of argument 1 must hold 1-based axis numbers, got a")
    has(err(hl.jit, id, {dynamic_axes = {{1}, true}}),
        "halua: jit: dynamic_axes mixes axis numbers and per-argument lists; give {1} (every argument) or {{1}, {}, {2}} (one list per argument)")
    has(err(hl.jit, id, {dynamic_axes = {1, {2}}}),
        "halua: jit: dynamic_axes mixes axis numbers and per-argument lists; give {1} (every argument) or {{1}, {}, {2}} (one list per argument)")
    has(err(hl.jit, id, {dynamic_axes = {{1}, foo = {1}}}), "halua: jit: dynamic_axes must be a list, got key foo")
    has(err(hl.jit, id, {dynamic_axis = {1}}), "halua: jit: unknown option 'dynamic_axis'")
  end)

  it("refuses axes of a static argument", function()
    has(err(hl.jit, function(x, n) return x * n end, {static_argnums = {2}, dynamic_axes = {{1}, {1}}}),
        "halua: jit: dynamic_axes names axes of argument 2, which is static")
    -- an empty list for the static argument is fine, and so is {1} for every array argument
    local f = hl.jit(function(x, n) return x * n end, {static_argnums = {2}, dynamic_axes = {{1}, {}}})
    close(f(hl.ones({3, 2}), 4), hl.full({3, 2}, 4))
    local g = hl.jit(function(x, n) return x * n end, {static_argnums = {2}, dynamic_axes = {1}})
    close(g(hl.ones({5, 2}), 3), hl.full({5, 2}, 3))
  end)

  it("refuses an axis past an argument's rank, at the call", function()
    local f = J(function(x) return x end, {3})
    has(err(f, hl.ones({2, 3})), "halua: jit: dynamic_axes names axis 3 of argument 1, which has 2 axes")
    local g = J(function(x, y) return x:sum() + y:sum() end, {{1}, {2}})
    has(err(g, hl.ones({2, 3}), hl.ones({3})), "halua: jit: dynamic_axes names axis 2 of argument 2, which has 1 axis")
    local h = J(function(t) return t.a end, {{2}})
    has(err(h, {a = hl.ones({2})}), "halua: jit: dynamic_axes names axis 2 of argument 1 (leaf 1), which has 1 axis")
  end)

  it("makes every leaf of a pytree argument dynamic", function()
    local seen
    local f = J(function(t) seen = seen or (tostring(t.a.shape[1]) .. "," .. tostring(t.b.shape[1])); return t.a * 2 + hl.sum(t.b) end, {1})
    local ins = {{a = data({3, 2}), b = data({3}, 1)}, {a = data({7, 2}), b = data({7}, 1)}}
    local got = {f(ins[1])}
    local m = misses(function() got[2] = f(ins[2]) end, f)
    assert.are.equal("b,b", seen)
    assert.are.equal(0, m)
    for i, t in ipairs(ins) do close(got[i], t.a * 2 + hl.sum(t.b)) end
  end)
end)

describe("dynamic_axes: unification and conflicts", function()
  it("gives equal sizes one symbol, and one program serves every equal size", function()
    local names
    -- (the first trace's names: the eager reference runs f too)
    local f = function(x, y) names = names or (tostring(x.shape[1]) .. " " .. tostring(y.shape[1])); return x * y + x end
    local m = against_eager(f, {1}, {1, 2, 5, 8, 1000}, function(n) return data({n, 4}), data({n, 4}, 0.5) end)
    assert.are.equal("b b", names)
    assert.are.equal(0, m)
  end)

  it("gives different sizes different symbols where they do not meet", function()
    local names
    -- (the first trace's names: each new size is traced once more at its own sizes, as numbers)
    local f = function(x, y) names = names or (tostring(x.shape[1]) .. " " .. tostring(y.shape[1])); return hl.sum(x, 1) + hl.sum(y, 1) end
    local pf = J(f, {1})
    local a, b, c, d = data({3, 4}), data({5, 4}, 1), data({8, 4}), data({2, 4}, 1)
    local r1, r2 = pf(a, b), nil
    local m = misses(function() r2 = pf(c, d) end, pf)
    assert.are.equal("b c", names)
    assert.are.equal(0, m)
    close(r1, f(a, b))
    close(r2, f(c, d))
    -- (equal sizes now are a new signature: one symbol for both)
    names = nil
    local r3 = pf(c, c)
    assert.are.equal("b b", names)
    close(r3, f(c, c))
  end)

  it("says which sizes conflict in an elementwise op", function()
    local f = J(function(x, y) return x + y end, {1})
    close(f(hl.ones({3, 4}), hl.ones({3, 4})), hl.full({3, 4}, 2))
    local msg = err(f, hl.ones({3, 4}), hl.ones({5, 4}))
    has(msg, "halua: add: cannot broadcast shapes [b,4] and [c,4] (under dynamic_axes, b = axis 1 of x, c = axis 1 of y; " ..
             "sizes that meet in an operation must be one size: pass equal sizes there, or leave one of them out of dynamic_axes)")
  end)

  it("says which sizes conflict in a matmul, and unifies its contraction", function()
    local f = function(x, w) return hl.matmul(hl.transpose(x), w) end
    assert.are.equal(0, against_eager(f, {1}, {1, 3, 6, 1000}, function(n) return data({n, 4}), data({n, 2}, 1) end, 1e-4))
    local msg = err(J(f, {1}), hl.ones({3, 4}), hl.ones({5, 2}))
    has(msg, "halua: matmul: inner dimensions of [4,b] and [c,2] differ (b vs c) (under dynamic_axes, b = axis 1 of x, c = axis 1 of w;")
  end)

  it("refuses a fifth different size by compiling per size, with right values", function()
    local f = function(a, b, c, d, e) return hl.sum(a) + hl.sum(b) + hl.sum(c) + hl.sum(d) + hl.sum(e) end
    local pf = J(f, {1})
    local ins = {data({1}), data({2}), data({3}), data({4}), data({5})}
    close(pf(unpack(ins)), f(unpack(ins)))
    -- four sizes are four symbols, one program
    local seen
    local g = J(function(a, b, c, d) seen = seen or tostring(a.shape[1] + b.shape[1] + c.shape[1] + d.shape[1]); return a:sum() + b:sum() + c:sum() + d:sum() end, {1})
    local r = g(ins[1], ins[2], ins[3], ins[4])
    assert.are.equal("b + c + d + e", seen)
    close(r, f(ins[1], ins[2], ins[3], ins[4], hl.zeros({1})))
  end)
end)

describe("dynamic_axes: sizes inside the traced function", function()
  it("print as expressions of the symbols", function()
    local t
    local f = J(function(x)
      local b = x.shape[1]
      t = {tostring(b), tostring(2 * b + 1), tostring(b - 1), tostring(b / 2), tostring(x.shape[1] + x.shape[1]),
           tostring(x.size), tostring(-b), tostring(3 - b), tostring(b * 3 - 2), tostring((4 * b + 2) / 2),
           tostring(b:floordiv(2)), tostring((2 * b + 1):floordiv(2)), "n=" .. b, tostring(b * b), tostring(x.shape[2])}
      return x * 2
    end, {1})
    close(f(data({4, 3})), data({4, 3}) * 2)
    assert.are.same({"b", "2*b + 1", "b - 1", "b/2", "2*b", "3*b", "-b", "-b + 3", "3*b - 2", "2*b + 1", "b/2", "b", "n=b", "b*b", "3"}, t)
  end)

  it("compute to numbers when the symbol cancels", function()
    local t
    local f = J(function(x)
      local b = x.shape[1]
      t = {b - b, b * 0, (2 * b) / 2 - b, (2 * b + 1) % 2, b + 1 - b}
      return x
    end, {1})
    f(data({6, 2}))
    assert.are.same({0, 0, 0, 1, 1}, t)
    for _, v in ipairs(t) do assert.are.equal("number", type(v)) end
  end)

  it("answer the comparisons every size answers alike", function()
    local t
    local f = J(function(x)
      local b = x.shape[1]
      t = {b == 0, b + 1 > b, b > 0, b < 0, b ~= 0, 2 * b > b, b == b, b <= b, b >= b, b <= 0, b < b + 1,
           b == b + 1, b <= 2 * b, b ~= b + 1, b == "b"}
      return x
    end, {1})
    f(data({4, 2}))
    assert.are.same({false, true, true, false, true, true, true, true, true, false, true, false, true, true, false}, t)
  end)

  -- every size is at least 1, so these hold at every size (b >= 1 is true): a difference whose
  -- extreme is 0 at size 1 (1 - b) is decided
  it("answer comparisons whose bound is met at size 1 (b >= 1, b - 1 >= 0, b < 1)", function()
    local t
    local f = J(function(x)
      local b = x.shape[1]
      t = {b >= 1, 1 <= b, b - 1 >= 0, b + 1 >= 2, b < 1, 0 >= b}
      return x
    end, {1})
    f(data({4, 2}))
    assert.are.same({true, true, true, true, false, false}, t)
  end)

  it("refuse the comparisons sizes answer differently, naming the way out", function()
    local tail = " depends on the dynamic size b (axis 1 of x): a Lua branch on a traced size would fix the program to one size; " ..
                 "mark the argument static (static_argnums), leave that axis out of dynamic_axes, or choose with hl.cond or hl.where"
    local cases = {
      {function(b) return b > 3 end, "halua: jit: 3 < b" .. tail},
      {function(b) return b == 1 end, "halua: jit: b == 1" .. tail},
      {function(b) return b >= 2 end, "halua: jit: 2 <= b" .. tail},
      {function(b) return b - 1 > 0 end, "halua: jit: 0 < b - 1" .. tail},
      {function(b) return b <= 5 end, "halua: jit: b <= 5" .. tail},
    }
    for _, c in ipairs(cases) do
      has(err(J(function(x) c[1](x.shape[1]); return x end, {1}), data({4, 2})), c[2])
    end
    -- a Lua `if` on a size, the common case
    local f = J(function(x) if x.shape[1] > 3 then return x end return -x end, {1})
    has(err(f, data({5, 2})), "halua: jit: 3 < b" .. tail)
    -- two symbols: both are named
    local g = J(function(x, y) if x.shape[1] < y.shape[1] then return hl.sum(x) end return hl.sum(y) end, {1})
    has(err(g, data({2, 2}), data({3, 2})),
        "halua: jit: b < c depends on the dynamic sizes b (axis 1 of x), c (axis 1 of y): a Lua branch on a traced size")
  end)

  it("refuse them in a user's module that sits in a folder named halua (only halua's own files see numbers)", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir .. "/halua")
    local path = dir .. "/halua/user_model.lua"
    local file = assert(io.open(path, "w"))
    file:write("return function(x) if x.shape[1] > 3 then return x * 2 end return x * 3 end\n")
    file:close()
    local f = dofile(path)
    os.remove(path)
    os.execute("rmdir " .. dir .. "/halua " .. dir)
    has(err(J(f, {1}), data({5, 2})), "halua: jit: 3 < b depends on the dynamic size b (axis 1 of x)")
  end)

  it("leave an argument's static extent a number, also one near a made-up size (16000 samples at 16 kHz)", function()
    local f = function(x)
      if x.shape[2] ~= 16000 then return x end
      return hl.sum(hl.reshape(x, {x.shape[1], x.shape[2] / 160, 160}), 3) * (x.shape[2] % 7)
    end
    assert.are.equal(0, against_eager(f, {1}, {1, 2, 3}, function(n) return data({n, 16000}) end))
  end)

  it("refuse d:value() with the way out", function()
    local f = J(function(x) local n = x.shape[1]:value(); return x * n end, {1})
    local msg = err(f, data({4, 2}))
    has(msg, "halua: jit: the value of the dynamic size b is not known while tracing (every size shares one program)")
    has(msg, "mark the argument static (static_argnums) or leave that axis out of dynamic_axes to compute with it in Lua")
  end)

  it("refuse arithmetic that is not a size", function()
    local function at(fn) return err(J(function(x) fn(x.shape[1]); return x end, {1}), data({4, 2})) end
    has(at(function(b) return (b + 1) / 2 end), "halua: jit: (b + 1) / 2 is not a whole size (use d:floordiv(2))")
    has(at(function(b) return b / b end), "halua: jit: a size divided by a dynamic size (b / b) is not a size the program can keep")
    has(at(function(b) return b / 0 end), "halua: jit: a dynamic size divides by a positive whole number, got 0")
    has(at(function(b) return b / 1.5 end), "halua: jit: a dynamic size divides by a positive whole number, got 1.5")
    has(at(function(b) return b ^ 2 end), "halua: jit: a dynamic size raised to a power is not a size the program can keep")
    has(at(function(b) return b + "a" end), "halua: jit: + of a dynamic size and a string (sizes compute with numbers and other sizes)")
    has(at(function(b) return #b end), "halua: jit: # of a dynamic size (a size is not a table)")
    has(at(function(b) return b() end), "halua: jit: a dynamic size is not a function")
    has(at(function(b) return b % 0 end), "halua: jit: a dynamic size's % takes a positive whole number, got 0")
  end)

  it("refuse use after the trace, and being returned", function()
    local saved
    local f = J(function(x) saved = x.shape[1]; return x end, {1})
    f(data({3, 2}))
    has(err(tostring, saved), "halua: jit: a dynamic size was used after the jitted function that traced it returned; " ..
                              "sizes of dynamic_axes exist only while the function is traced")
    has(err(function() return saved + 1 end), "halua: jit: a dynamic size was used after the jitted function that traced it returned")
    local g = J(function(x) return x, x.shape[1] end, {1})
    has(err(g, data({3, 2})), "returns a dynamic size (result 2); return an array (hl.array of it is not a size either), " ..
                               "or leave the axis out of dynamic_axes")
  end)

  it("floordiv and % serve the sizes their guard holds and specialise the rest", function()
    -- (the eager reference sees numbers)
    local function floordiv(d, k) return type(d) == "number" and math.floor(d / k) or d:floordiv(k) end
    local f = function(x) local h = floordiv(x.shape[1], 2); return hl.reshape(x[{{1, h}}], {h * x.shape[2]}) end
    against_eager(f, {1}, {2, 3, 4, 7, 1000}, function(n) return data({n, 3}) end)
    local g = function(x) local r = x.shape[1] % 3; return x * (r + 1) end
    against_eager(g, {1}, {1, 2, 3, 4, 5, 999}, function(n) return data({n, 2}) end)
  end)
end)

describe("dynamic_axes: functions that take sizes", function()
  local sizes = {1, 2, 5, 8, 1000}
  local function rows(n) return data({n, 3}) end
  local cases = {
    {"reshape to {3*b}", function(x) return hl.reshape(x, {x.shape[1] * 3}) end},
    {"reshape to {3, b}", function(x) return hl.reshape(x, {3, x.shape[1]}) end},
    {"reshape with -1", function(x) return hl.reshape(x, {-1, x.shape[1]}) end},
    {"zeros", function(x) return x + hl.zeros({x.shape[1], 3}) end},
    {"ones", function(x) return hl.ones({x.shape[1], 3}) * 2 + x end},
    {"full", function(x) return hl.full({x.shape[1] + 1}, 7) end},
    {"full int32", function(x) return hl.full({2, 2 * x.shape[1]}, 3, "int32") end},
    {"arange(b)", function(x) return hl.arange(x.shape[1]) end},
    {"arange(1, b + 1)", function(x) return hl.arange(1, x.shape[1] + 1) end},
    {"arange(b, 0, -1)", function(x) return hl.arange(x.shape[1], 0, -1) end},
    {"arange float32", function(x) return hl.arange(x.shape[1], "float32") * x[{{}, 1}] end},
    {"eye(b)", function(x) return hl.eye(x.shape[1]) end},
    {"eye(b, 3)", function(x) return hl.eye(x.shape[1], 3) + x end},
    {"broadcast_to", function(x) return hl.broadcast_to(x[{{}, 1}], {2, x.shape[1]}) end},
    {"x / b", function(x) return x / x.shape[1] end},
    -- (float32 rounding of x * 1001 - 1000 differs with the order of operations: 1e-4)
    {"x * (b + 1) - b", function(x) return x * (x.shape[1] + 1) - x.shape[1] end, 1e-4},
    {"mean", function(x) return hl.mean(x) end},
    {"mean axis 1", function(x) return hl.mean(x, 1) end},
    {"sum / x.size", function(x) return hl.sum(x) / x.size end},
    {"slice to b", function(x) return x[{{1, x.shape[1]}}] end},
  }
  for _, c in ipairs(cases) do
    it(c[1] .. ": right values at sizes 1, 2, 5, 8, 1000 from one compile", function()
      assert.are.equal(0, against_eager(c[2], {1}, sizes, rows, c[3]))
    end)
  end

  it("arange's known values", function()
    local f = J(function(x) return hl.arange(2, x.shape[1] + 2) end, {1})
    assert.are.same({2, 3, 4, 5, 6}, f(data({5, 1})):totable())
    assert.are.same({2}, f(data({1, 1})):totable())
    local e = J(function(x) return hl.eye(x.shape[1]) end, {1})(data({3, 1}))
    assert.are.same({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, e:totable())
  end)

  it("arange with a step of 3 (a floordiv of the span) at every size", function()
    against_eager(function(x) return hl.arange(0, 2 * x.shape[1], 3) end, {1}, {1, 2, 3, 4, 6, 1000}, rows)
    has(err(J(function(x) return hl.arange(0, x.shape[1], 0.5) end, {1}), rows(2)),
        "halua: arange: with a dynamic size, step must be a non-zero whole number")
  end)

  it("arange of a range empty at every size is empty (NumPy's arange(b, 1)); one empty at some sizes only is an error", function()
    against_eager(function(x) return hl.arange(x.shape[1], 1) end, {1}, {1, 2, 5}, rows)
    has(err(J(function(x) return hl.arange(3, x.shape[1]) end, {1}), rows(4)),
        "halua: arange: the range 3 to b is empty at some sizes and not at others")
  end)

  it("slicing bounds: x[{{2, b - 1}}] from one compile where it is not empty, specialised where it is", function()
    local f = function(x) return x[{{2, x.shape[1] - 1}}] end
    assert.are.equal(0, against_eager(f, {1}, {3, 4, 7, 1000}, rows))
    -- size 2 and 1 make an empty slice: not a size the program serves, so each is specialised
    against_eager(f, {1}, {2, 1}, rows)
    local g = function(x) return x[{{x.shape[1] - 1, x.shape[1]}, 2}] end
    assert.are.equal(0, against_eager(g, {1}, {2, 5, 1000}, rows))
  end)

  it("split into equal parts from one compile at even sizes; split's own error at an odd one", function()
    local f = function(x) local a, b = unpack(hl.split(x, 2)); return a - b * 2 end
    assert.are.equal(0, against_eager(f, {1}, {2, 4, 8, 1000}, rows))
    local pf = J(f, {1})
    pf(rows(6))
    has(err(pf, rows(3)), "halua: split: axis 1 of length 3 does not divide into 2 equal parts")
    has(err(pf, rows(1)), "halua: split: axis 1 of length 1 does not divide into 2 equal parts")
    close(pf(rows(10)), f(rows(10)))
  end)

  it("a second dynamic axis: sizes of both in one shape", function()
    local f = function(x) return hl.reshape(x, {x.shape[1] * x.shape[2]}) + hl.mean(x) end
    against_eager(f, {1, 2}, {1, 4, 9}, function(n) return data({n, n + 1}) end)
    local g = function(x) return hl.zeros({x.shape[2], x.shape[1]}) + hl.transpose(x) end
    assert.are.equal(0, against_eager(g, {1, 2}, {1, 3, 8}, function(n) return data({n, 2 * n + 1}) end))
  end)
end)

describe("dynamic_axes: grad, value_and_grad, vmap and hl.nn", function()
  local P = mlp_params(5, 8, 3)
  local sizes = {1, 2, 7, 64, 1000}
  local function batch(n) return P, data({n, 5}, 0.7), onehot(n, 3) end

  it("value_and_grad of an MLP loss (params static shape, batch dynamic) matches the static jit, one compile", function()
    local vg = hl.value_and_grad(mlp_loss)
    local pf = J(vg, {{}, {1}, {1}})
    local sf = hl.jit(vg)
    local ins = {}
    for i, n in ipairs(sizes) do ins[i] = {batch(n)} end
    local got = {{pf(unpack(ins[1]))}}
    local m = misses(function() for i = 2, #sizes do got[i] = {pf(unpack(ins[i]))} end end, pf)
    assert.are.equal(0, m)
    for i, n in ipairs(sizes) do
      local v, g = sf(unpack(ins[i]))
      close(got[i][1], v, 1e-5, "loss at " .. n)
      close(got[i][2], g, 1e-4, "grad at " .. n)
    end
  end)

  it("grad of the MLP loss against central finite differences", function()
    local gf = J(hl.grad(mlp_loss), {{}, {1}, {1}})
    local _, x, y = batch(7)
    local g = gf(P, x, y)
    local w = flat(P.w2)
    local h = 1e-2
    for _, k in ipairs {1, 7, 24} do
      local function at(d)
        local v = {}
        for i, e in ipairs(w) do v[i] = e end
        v[k] = v[k] + d
        local p = {w1 = P.w1, b1 = P.b1, b2 = P.b2, w2 = hl.reshape(hl.array(v, "float64"), {8, 3})}
        local pd = {}
        for name, a in pairs(p) do pd[name] = a:astype("float64") end
        return mlp_loss(pd, x:astype("float64"), y:astype("float64")):item()
      end
      local fd = (at(h) - at(-h)) / (2 * h)
      local got = flat(g.w2)[k]
      assert(math.abs(got - fd) <= 1e-3 * (1 + math.abs(fd)), string.format("d loss / d w2[%d]: %.7g, finite differences %.7g", k, got, fd))
    end
  end)

  it("grad with respect to the dynamic batch input", function()
    local inner = function(x, p) return hl.sum(hl.tanh(mlp(p, x)) ^ 2) / x.shape[1] end
    local f = hl.grad(inner)
    local ref = hl.grad(function(x, p) return hl.sum(hl.tanh(mlp(p, x)) ^ 2) / x.shape[1] end)
    local pf = J(f, {{1}, {}})
    local ins = {}
    for i, n in ipairs(sizes) do ins[i] = data({n, 5}, 0.2) end
    local got = {pf(ins[1], P)}
    local m = misses(function() for i = 2, #ins do got[i] = pf(ins[i], P) end end, pf)
    assert.are.equal(0, m)
    for i, x in ipairs(ins) do close(got[i], ref(x, P), 1e-4, "size " .. sizes[i]) end
  end)

  it("softmax, log_softmax and a mean over the batch, one compile each", function()
    local f1 = function(p, x) return hl.nn.softmax(mlp(p, x)) end
    local f2 = function(p, x) return hl.nn.log_softmax(mlp(p, x), 2) end
    local f3 = function(p, x, y) return mlp_loss(p, x, y) end
    local f4 = function(p, x) return hl.mean(hl.nn.relu(mlp(p, x)), 1) end
    assert.are.equal(0, against_eager(f1, {{}, {1}}, sizes, function(n) return P, data({n, 5}) end))
    assert.are.equal(0, against_eager(f2, {{}, {1}}, sizes, function(n) return P, data({n, 5}) end))
    assert.are.equal(0, against_eager(f3, {{}, {1}, {1}}, sizes, batch))
    assert.are.equal(0, against_eager(f4, {{}, {1}}, sizes, function(n) return P, data({n, 5}) end))
  end)

  -- Concrete operands that meet a tracer (one_hot's positions 1..n against [b,1] labels, a
  -- closed-over bias, vmap's body with a closed-over array, vmap's broadcast constants) are
  -- captured at their own shape and broadcast in the trace, so no constant follows the dynamic
  -- size: one program each.
  it("hl.nn.cross_entropy with integer labels: right values, one compile", function()
    local f = function(p, x, y) return hl.nn.cross_entropy(mlp(p, x), y) end
    local function labels(n) return (hl.arange(n) % 3 + 1):astype("int32") end
    assert.are.equal(0, against_eager(f, {{}, {1}, {1}}, sizes, function(n) return P, data({n, 5}), labels(n) end))
  end)

  it("vmap inside the polymorphic function (a reduction per row)", function()
    local f = function(x) return hl.vmap(function(r) return hl.sum(r * r) + r[1] end)(x) end
    assert.are.equal(0, against_eager(f, {1}, sizes, function(n) return data({n, 5}) end))
  end)

  it("vmap inside the polymorphic function (its body uses arrays the function captures)", function()
    local g = function(x, p) return hl.vmap(function(r) return hl.sum(mlp(p, hl.reshape(r, {1, 5}))) end)(x) end
    assert.are.equal(0, against_eager(g, {{1}, {}}, sizes, function(n) return data({n, 5}), P end, 1e-4))
  end)

  it("vmap inside the polymorphic function (its body uses an array the function closes over)", function()
    local W = data({5, 3}, 0.9)
    local f = function(x) return hl.vmap(function(r) return hl.sum(hl.matmul(hl.reshape(r, {1, 5}), W)) end)(x) end
    assert.are.equal(0, against_eager(f, {1}, sizes, function(n) return data({n, 5}) end, 1e-4))
  end)

  it("vmap inside the polymorphic function (an elementwise op with a number)", function()
    local f = function(x) return hl.vmap(function(r) return r * 2 + 1 end)(x) end
    assert.are.equal(0, against_eager(f, {1}, sizes, function(n) return data({n, 5}) end))
  end)

  it("an array the function closes over, broadcast against the batch (a bias), keeps it polymorphic", function()
    local bias = data({5}, 0.3)
    local W = data({5, 4}, 0.6)
    -- (a closed-over matrix in a matmul needs no broadcast: one program today)
    assert.are.equal(0, against_eager(function(x) return hl.matmul(x, W) end, {1}, sizes,
                                      function(n) return data({n, 5}) end, 1e-4))
    assert.are.equal(0, against_eager(function(x) return x + bias end, {1}, sizes, function(n) return data({n, 5}) end))
  end)

  it("a constant array made inside the function keeps it polymorphic", function()
    local f = function(x) return x + hl.array({1, 2, 3, 4, 5}, "float32") end
    assert.are.equal(0, against_eager(f, {1}, sizes, function(n) return data({n, 5}) end))
  end)

  it("the polymorphic function under hl.vmap and hl.grad from outside", function()
    local inner = J(function(x) return hl.sum(x * x) / x.shape[1] end, {1})
    local xs = data({4, 6, 3})
    close(hl.vmap(inner)(xs), hl.vmap(function(x) return hl.sum(x * x) / 6 end)(xs))
    local x = data({5, 3})
    close(hl.grad(inner)(x), x * (2 / 5))
  end)
end)

describe("dynamic_axes: bounds the trace checked only at its made-up sizes", function()
  local rows = function(n) return data({n, 3}) end
  -- a slice reads in[start + k * step]; every trace's operand (thousands of rows) holds a bound
  -- given as a number, so each call's sizes must keep the reads inside the operand too

  it("a range with a number for its end: one program where it fits, NumPy's clamp where it does not", function()
    local f = function(x) return x[{{1, 10}}] * 2 end
    assert.are.equal(0, against_eager(f, {1}, {12, 10, 1000}, rows))
    against_eager(f, {1}, {12, 1, 3, 9}, rows)
    local g = function(x) return x[{{-4, 6, 1}}] + 1 end
    against_eager(g, {1}, {9, 4, 5, 6, 1000}, rows)
  end)

  it("an index given as a number: the index error where the axis is shorter", function()
    local pf = J(function(x) return x[5] end, {1})
    close(pf(rows(7)), rows(7)[5])
    has(err(pf, rows(2)), "halua: index: index 5 is out of range for axis 1 of shape [2,3]")
    has(err(pf, rows(4)), "halua: index: index 5 is out of range for axis 1 of shape [4,3]")
    close(pf(rows(5)), rows(5)[5])
  end)

  it("a reshape past 2^31 elements is an error naming its size (its flat index is computed in 32 bits)", function()
    local pf = J(function(x) return hl.sum(hl.reshape(hl.ones({x.shape[1] * 1000000}, "int8"), {-1, 2}), 1) end, {1})
    assert.are.same({3000000, 3000000}, pf(hl.zeros({6})):totable())
    has(err(pf, hl.zeros({2200})), "halua: jit: a reshape of 2200000000 elements in a program with dynamic_axes (at most 2^31-1")
  end)

  it("dynamic_slice with number starts: clamped into x at each size", function()
    local f = function(x) return hl.dynamic_slice(x, {2, 1}, {4, 3}) end
    against_eager(f, {1}, {6, 4, 5, 1000}, rows)
    has(err(J(f, {1}), rows(3)), "halua: dynamic_slice: size 4 of axis 1 must be an integer in 0..3")
  end)
end)

describe("dynamic_axes: each new size checked against a trace at its own sizes", function()
  -- halua's own functions check and clamp sizes as numbers (convolve's output is the longer of
  -- two lengths; take checks its indices against the axis): at the made-up sizes every such
  -- check passes the same way, so a new size is traced once at its own sizes and served only
  -- where that trace is the polymorphic program
  it("convolve's 'same' output (the longer length) at sizes below the kernel's", function()
    local k = hl.array({1, 2, 3}, "float32")
    local f = function(x) return hl.convolve(x, k, "same") end
    local pf = J(f, {1})
    for _, n in ipairs {5, 1, 2, 7, 3} do
      local x = hl.arange(1, n + 1):astype("float32")
      close(pf(x), f(x), 1e-5, "size " .. n)
    end
    -- 5, 7 and 3 from the polymorphic program; 1 and 2 specialised
    assert.truthy(tostring(pf):find("5 signatures traced, 3 of them by 1 polymorphic program", 1, true), tostring(pf))
  end)

  it("take's index check at the call's own sizes", function()
    local pf = J(function(x) return hl.take(x, hl.array({1, 3}, "int32"), 1) end, {1})
    close(pf(data({5, 2})), hl.take(data({5, 2}), hl.array({1, 3}, "int32"), 1))
    has(err(pf, data({2, 2})), "halua: take: index 3 is out of range 1..2")
    has(err(pf, data({1, 2})), "halua: take: index 3 is out of range 1..1")
    close(pf(data({4, 2})), hl.take(data({4, 2}), hl.array({1, 3}, "int32"), 1))
  end)
end)

describe("dynamic_axes: compiled loops", function()
  -- a loop's carries, scanned rows and the values its body uses may have the dynamic sizes, and
  -- a scan may run along a dynamic axis: one polymorphic loop, its body one program too
  it("fori_loop with a carry of the dynamic size, and one whose carry is made from x.shape", function()
    local f = function(x) return hl.fori_loop(1, 4, function(i, c) return c * 0.5 + x * i end, x) end
    assert.are.equal(0, against_eager(f, {1}, {1, 2, 7, 1000}, function(n) return data({n, 3}) end))
    local g = function(x) return hl.fori_loop(1, 3, function(i, c) return c + hl.sum(x) * i end, hl.zeros({x.shape[1]})) end
    assert.are.equal(0, against_eager(g, {1}, {1, 2, 7}, function(n) return data({n, 3}) end))
  end)

  it("while_loop: the condition and the body use a value of the dynamic size", function()
    local f = function(x, lim)
      return hl.while_loop(function(c) return hl.lt(hl.sum(c), hl.sum(lim)) end, function(c) return c * 2 + x end, x)
    end
    -- (50 per row: more steps for fewer rows)
    assert.are.equal(0, against_eager(f, {{1}, {1}}, {1, 2, 7, 40}, function(n) return hl.abs(data({n, 3})) + 0.1, hl.ones({n}) * 50 end))
  end)

  it("scan: a carry of the dynamic size over a fixed number of steps, and a scan along the dynamic axis", function()
    local f = function(c0, xs) return hl.scan(function(c, r) return c * 0.9 + r, hl.sum(c * r, 2) end, c0, xs) end
    assert.are.equal(0, against_eager(f, {{1}, {2}}, {1, 2, 9}, function(n) return data({n, 3}), data({5, n, 3}, 1) end))
    -- the number of steps is the dynamic size: the stacked outputs have that many rows
    local g = function(xs) return hl.scan(function(c, r) return c + r, c * 2 end, hl.zeros({3}), xs) end
    assert.are.equal(0, against_eager(g, {1}, {1, 2, 3, 50}, function(n) return data({n, 3}) end))
  end)

  it("fori_loop with a dynamic size for its bounds, also under grad; a size with no steps is specialised", function()
    local f = function(x) return hl.fori_loop(1, x.shape[1], function(i, c) return c * 0.5 + i end, x) end
    assert.are.equal(0, against_eager(f, {1}, {1, 2, 7, 30}, function(n) return data({n, 2}) end))
    -- (b - 1 steps: none at b = 1, which the program does not serve)
    local g = hl.grad(function(x)
      return hl.sum(hl.fori_loop(2, x.shape[1], function(i, c) return hl.sin(c) * 0.9 + i * 0.01 end, x))
    end)
    assert.are.equal(0, against_eager(g, {1}, {2, 3, 7, 12}, function(n) return data({n}) end))
    local pg = J(g, {1})
    close(pg(data({5})), g(data({5})))
    assert.are.equal(0, programs_of(pg))
    close(pg(data({1})), g(data({1})))
    assert.are.equal(1, programs_of(pg))   -- b = 1: no steps, compiled for that size
  end)

  it("nested loops, a body that uses the size as a number, and a loop that the size does not reach", function()
    local nested = function(x)
      return hl.fori_loop(1, 3, function(_, c) return hl.fori_loop(1, 2, function(_, d) return d * 0.5 + c end, c) end, x)
    end
    assert.are.equal(0, against_eager(nested, {1}, {1, 4, 6}, function(n) return data({n, 2}) end))
    local scaled = function(x) local n = x.shape[1]; return hl.fori_loop(1, 3, function(_, c) return c * n end, x) end
    local pf = J(scaled, {1})
    assert.are.same({8, 8}, pf(hl.ones({2})):totable())   -- 2^3
    assert.are.same({27, 27, 27}, pf(hl.ones({3})):totable())
    assert.are.equal(0, programs_of(pf))
    local apart = function(x, w) return x + hl.fori_loop(1, 4, function(_, c) return hl.sin(c) end, w) end
    assert.are.equal(0, against_eager(apart, {{1}, {}}, {1, 4, 6}, function(n) return data({n, 2}), data({2}, 2) end))
  end)

  it("grad of an RNN (a scan over a dynamic time axis, a dynamic batch), against eager and finite differences", function()
    local function loss(w, xs, h0)
      local h, ys = hl.scan(function(h, x) local hn = hl.tanh(hl.matmul(h, w) + x) return hn, hl.sum(hn, 2) end, h0, xs)
      return hl.sum(h * h) + hl.sum(ys)
    end
    local make = function(n) return data({4, 4}, 0.3) * 0.5, data({n + 1, n, 4}), data({n, 4}, 0.7) end
    assert.are.equal(0, against_eager(hl.grad(loss, {1, 2, 3}), {{}, {1, 2}, {1}}, {1, 2, 5}, make, 1e-4))
    -- d loss / d w[2][3] at one size, by central differences in float64
    local w, xs, h0 = make(3)
    local g = J(hl.grad(loss), {{}, {1, 2}, {1}})(w, xs, h0)
    local function at(v)
      local w64 = w:astype("float64"):at({2, 3}):set(v)
      return loss(w64, xs:astype("float64"), h0:astype("float64")):item()
    end
    local v, eps = w[2][3]:item(), 1e-5
    local fd = (at(v + eps) - at(v - eps)) / (2 * eps)
    assert(math.abs(g[2][3]:item() - fd) <= 1e-3 * (1 + math.abs(fd)), "grad " .. g[2][3]:item() .. " against " .. fd)
  end)

  it("vmap of a loop, and the loop under value_and_grad", function()
    local body = function(x) return hl.fori_loop(1, 4, function(_, c) return hl.sin(c) * 0.5 + x end, x) end
    assert.are.equal(0, against_eager(hl.vmap(body), {1}, {1, 4, 6}, function(n) return data({n, 2}) end))
    local vg = hl.value_and_grad(function(x) return hl.sum(body(x)) end)
    assert.are.equal(0, against_eager(vg, {1}, {1, 4, 6}, function(n) return data({n, 2}) end))
  end)

  it("a body that sees a dynamic size only as a multiple is compiled per size, with right values", function()
    local f = function(x) return hl.fori_loop(1, 3, function(_, c) return c * 2 + 1 end, hl.zeros({x.shape[1] * 2})) end
    local pf = J(f, {1})
    for _, n in ipairs {1, 2, 5} do close(pf(data({n, 3})), f(data({n, 3}))) end
    assert.are.equal(3, programs_of(pf))
  end)
end)

describe("dynamic_axes: complex values", function()
  -- complex programs are lowered as float arrays of (re, im) pairs: the sizes' table follows
  -- each complex node to the nodes of that form (engine/core/hl_complex.c)
  local Z = hl.complex
  local make = function(n) return data({n, 4}), data({n, 4}, 0.7) end
  local cases = {
    arithmetic = function(x, y) return Z(x, y) * Z(y, x) + Z(x, y) / Z(y + 2, x) - hl.conj(Z(x, y)) end,
    functions = function(x, y) return hl.exp(Z(x, y)) + hl.sqrt(Z(x, y)) + hl.log(Z(x + 2, y)) + hl.sin(Z(x, y)) end,
    ["a size as a value"] = function(x, y) return Z(x, y) / x.shape[1] + x.shape[1] end,
    ["reductions over each axis"] = function(x, y)
      return hl.sum(Z(x, y), 1) + hl.mean(Z(y, x), 1) + hl.reshape(hl.sum(Z(x, y), 2), {1, x.shape[1]}):sum()
    end,
    shapes = function(x, y)
      local z = Z(x, y)
      local t = hl.transpose(hl.flip(z, 1))   -- (4, b)
      return hl.concatenate({hl.reshape(z, {x.shape[1] * 2, 2}), hl.transpose(t[{{1, 2}}])}, 1)
    end,
    ["slices, where, take, zeros"] = function(x, y)
      local z = hl.where(hl.gt(x, 0), Z(x, y), Z(y, x))[{{1, x.shape[1]}, {2, 3}}]
      return z + hl.take(Z(x, y), hl.array({1, 1}, "int32"), 2) + hl.zeros({x.shape[1], 2}, "complex64")
    end,
    matmul = function(x, y) return hl.matmul(Z(x, y), hl.transpose(Z(y, x))) + hl.matmul(hl.transpose(Z(x, y)), Z(y, x)):sum() end,
    -- (a part given as a number is a constant of the program, broadcast in it)
    ["numbers as parts"] = function(x, y) return Z(x, 1) * Z(2, y) + Z(x, true) end,
  }
  for name, f in pairs(cases) do
    it(name .. ": one program, right values at each size", function()
      assert.are.equal(0, against_eager(parts(f), {1}, {1, 2, 5, 9}, make, 1e-4))
    end)
  end
  it("abs, angle and real parts, under grad and vmap", function()
    local g = hl.grad(function(x, y) return hl.sum(hl.abs(Z(x, y) * Z(y, x)) + hl.angle(Z(x, y + 3))) end)
    assert.are.equal(0, against_eager(g, {1}, {1, 2, 5, 9}, make, 1e-4))
    local v = hl.vmap(function(x, y) return hl.abs(hl.sum(Z(x, y) * Z(y, 1))) end)
    assert.are.equal(0, against_eager(v, {1}, {1, 2, 5, 9}, make, 1e-4))
  end)
end)

describe("dynamic_axes: FFTs", function()
  -- along a static axis over a dynamic batch, and along the dynamic axis itself (the transform's
  -- length is read at run time; a scale of 1/n is a division by the size)
  local Z = hl.complex
  local make = function(n) return data({n, 8}), data({n, 8}, 0.7) end
  it("fft, ifft and rfft over a dynamic batch", function()
    assert.are.equal(0, against_eager(parts(function(x, y) return hl.fft.fft(Z(x, y)) + hl.fft.ifft(Z(y, x)) end), {1},
                                      {1, 3, 7}, make, 1e-4))
    assert.are.equal(0, against_eager(parts(function(x) return hl.fft.rfft(x) end), {1}, {1, 3, 7}, make, 1e-4))
  end)
  it("fft, ifft (norm backward, forward, ortho), rfft and irfft along the dynamic axis", function()
    for _, norm in ipairs {"backward", "forward"} do
      local f = function(x, y) return hl.fft.fft(Z(x, y), nil, 1, norm) + hl.fft.ifft(Z(y, x), nil, 1, norm) end
      assert.are.equal(0, against_eager(parts(f), {1}, {2, 4, 6, 10}, make, 1e-4))
    end
    -- (1/sqrt(n) is no affine function of n: compiled per size, with right values)
    against_eager(parts(function(x, y) return hl.fft.fft(Z(x, y), nil, 1, "ortho") end), {1}, {2, 4, 6}, make, 1e-4)
    assert.are.equal(0, against_eager(parts(function(x) return hl.fft.rfft(x, nil, 1) end), {1}, {2, 4, 6, 10}, make, 1e-4))
    assert.are.equal(0, against_eager(function(x, y) return hl.fft.irfft(Z(x, y), nil, 1) end, {1}, {2, 4, 6, 10}, make, 1e-4))
  end)
  it("the gradient of an fft along the dynamic axis", function()
    local g = hl.grad(function(x, y) return hl.sum(hl.abs(hl.fft.fft(Z(x, y), nil, 1))) end)
    assert.are.equal(0, against_eager(g, {1}, {2, 4, 6}, make, 1e-4))
  end)
end)

describe("dynamic_axes: what is compiled per size instead", function()
  it("a function scheduled by Halide's autoscheduler (schedule = \"auto\" plans for known sizes)", function()
    local f = function(x) return hl.tanh(x) * 2 end
    local pf = hl.jit(f, {dynamic_axes = {1}, schedule = "auto"})
    for _, n in ipairs {3, 4} do close(pf(data({n, 2})), f(data({n, 2}))) end
    assert.are.equal("<jit function " .. pf.name:gsub("^jit ", "") .. ": 2 signatures traced>", tostring(pf))
  end)

  it("cumsum along the dynamic axis gives right values at each size", function()
    against_eager(function(x) return hl.cumsum(x, 1) end, {1}, {1, 2, 7, 1000}, function(n) return data({n, 3}) end)
    -- along a static axis it stays one program
    assert.are.equal(0, against_eager(function(x) return hl.cumsum(x, 2) end, {1}, {1, 2, 7, 1000},
                                      function(n) return data({n, 3}) end))
  end)

  it("an empty batch (size 0) is specialised and works", function()
    local f = function(x) return x * 2 + hl.mean(x, 1) end
    against_eager(f, {1}, {0, 3, 0}, function(n) return data({n, 4}) end)
    local g = J(function(x) return hl.sum(x, 1) end, {1})
    assert.are.same({0, 0, 0, 0}, g(hl.zeros({0, 4})):totable())
    close(g(data({5, 4})), hl.sum(data({5, 4}), 1))
  end)
end)

describe("dynamic_axes: on a GPU", function()
  -- f jitted for CUDA with dynamic_axes, called at each size on inputs moved to the GPU (and
  -- CUDA the default device, where the arrays f makes go), against f run eagerly on the host;
  -- returns the programs compiled after the first call's
  local function on_gpu(f, axes, sizes, make, tol)
    local pf = J(f, axes, {device = "cuda"})
    local function call(n)
      local args = {make(n)}
      local dev = {}
      for i, a in ipairs(args) do dev[i] = a:to("cuda") end
      hl.default_device("cuda")
      local got = {pcall(pf, unpack(dev))}
      hl.default_device("cpu")
      assert(table.remove(got, 1), got[1])
      local want = {f(unpack(args))}
      assert.are.equal(#want, #got)
      for r = 1, #want do
        assert.matches("^cuda", got[r].device)
        close(got[r]:to("cpu"), want[r], tol, "size " .. n .. " result " .. r)
      end
    end
    call(sizes[1])
    return misses(function() for i = 2, #sizes do call(sizes[i]) end end, pf)
  end

  it("a CUDA function is one program for every size, with right values", function()
    if #hl.devices() == 1 then return end
    local f = function(x) return hl.tanh(x) * 2 + hl.sum(x, 1, true) end
    assert.are.equal(0, on_gpu(f, {1}, {1, 3, 1000, 7}, function(n) return data({n, 4}) end))
  end)

  it("constants the function makes on the GPU (an array, a number under vmap) keep it one program", function()
    if #hl.devices() == 1 then return end
    -- (each trace makes them anew in device memory: they are compared by value)
    local f = function(x) return x + hl.array({1, 2, 3, 4, 5}, "float32") end
    assert.are.equal(0, on_gpu(f, {1}, {1, 2, 9}, function(n) return data({n, 5}) end))
    local g = function(x) return hl.vmap(function(r) return r * 2 + 1 end)(x) end
    assert.are.equal(0, on_gpu(g, {1}, {1, 2, 9}, function(n) return data({n, 5}) end))
  end)

  it("a compiled loop with a carry of the dynamic size, and its gradient", function()
    if #hl.devices() == 1 then return end
    local f = function(x) return hl.fori_loop(1, 4, function(i, c) return c * 0.5 + x * i end, x) end
    assert.are.equal(0, on_gpu(f, {1}, {1, 2, 7, 300}, function(n) return data({n, 3}) end))
    local g = hl.grad(function(x)
      local _, ys = hl.scan(function(c, r) return c * 0.9 + r, c * r end, hl.zeros({3}) + 1, x)
      return hl.sum(ys)
    end)
    assert.are.equal(0, on_gpu(g, {1}, {1, 2, 9}, function(n) return data({n, 3}) end, 1e-4))
  end)
end)

describe("dynamic_axes: one compile across many sizes", function()
  it("the MLP forward called with batch sizes 1..256 compiles once", function()
    local P = mlp_params(16, 32, 10)
    local f = J(mlp, {{}, {1}})
    local xs = {}
    for n = 1, 256 do xs[n] = data({n, 16}, n * 0.01) end
    local got = {f(P, xs[1])}
    local m = misses(function() for n = 2, 256 do got[n] = f(P, xs[n]) end end, f)
    assert.are.equal(0, m)
    local sf = hl.jit(mlp)
    for _, n in ipairs {1, 2, 3, 17, 64, 128, 255, 256} do close(got[n], sf(P, xs[n]), 1e-4, "batch " .. n) end
  end)

  -- past 24 nodes a program is cut into several pipelines (hl_partition.h); a polymorphic one's
  -- parts read the symbols from its arguments and the buffers between them are sized per call
  it("a big program is cut into pipelines, the buffers between them sized at each call", function()
    local f = function(x, w)
      local v = x
      for i = 1, 30 do v = hl.tanh(hl.matmul(v, w) * 0.5 + hl.mean(v, 1, true) * 0.1 + i * 0.01) end
      return v, hl.sum(v, 1)
    end
    local w = data({5, 5}, 0.3)
    local pf = J(f, {{1}, {}})
    local xs = {}
    for i, n in ipairs {3, 1000, 2, 7, 64} do xs[i] = data({n, 5}, n * 0.01) end
    local got = {{pf(xs[1], w)}}
    local m = misses(function() for i = 2, #xs do got[i] = {pf(xs[i], w)} end end, pf)
    assert.are.equal(0, m)
    local parts = tonumber(pf:lower(xs[1], w):stmt():match("# pipeline 1 of (%d+)"))
    assert.is_true(parts ~= nil and parts >= 3, "a polymorphic program of 30 rounds is cut into pipelines")
    for i = 1, #xs do
      local want = {f(xs[i], w)}
      close(got[i][1], want[1], 1e-5, "size " .. xs[i].shape[1] .. " result 1")
      close(got[i][2], want[2], 1e-4, "size " .. xs[i].shape[1] .. " result 2")
    end
  end)
end)

describe("dynamic_axes: the log and the disk cache", function()
  -- the child's program: an MLP forward under dynamic_axes at batch N, its values and cache
  local MLP_CHILD = [==[
local hl = require "halua"
local N = tonumber(os.getenv("DYN_N"))
local function data(shape, phase)
  local size = 1
  for _, d in ipairs(shape) do size = size * d end
  return hl.reshape(hl.sin(hl.arange(size):astype("float32") * 0.37 + (phase or 0)), shape)
end
local P = {w1 = data({4, 6}, 0.1), b1 = data({6}, 0.2), w2 = data({6, 2}, 0.3), b2 = data({2}, 0.4)}
local x = data({N, 4}, 0.5)
local f = hl.jit(function(p, x) return hl.matmul(hl.tanh(hl.matmul(x, p.w1) + p.b1), p.w2) + p.b2 end,
                 {dynamic_axes = {{}, {1}}, name = "dyn_mlp"})
local y = f(P, x)
local i = hl.cache_info()
local vals = hl.reshape(y, {y.size}):totable()
io.write("RESULT return {disk_hits = ", i.disk_hits, ", vals = {", table.concat(vals, ","), "}}\n")
]==]

  local function expected(n)
    local P = {w1 = data({4, 6}, 0.1), b1 = data({6}, 0.2), w2 = data({6, 2}, 0.3), b2 = data({2}, 0.4)}
    return hl.reshape(mlp(P, data({n, 4}, 0.5)), {n * 2})
  end

  it("a second process with another batch size loads the polymorphic program from disk", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -m 0700 " .. q(dir)) == 0)
    local ok, e = pcall(function()
      local env = {HALUA_CACHE_DIR = dir, HALUA_LOG_COMPILES = "1", DYN_N = "5"}
      local r1 = child(MLP_CHILD, env)
      has(r1.err, "halua: tracing dyn_mlp polymorphic in b = axis 1 of x")
      assert.are.equal(1, count_lines(r1.err, "halua: compiled dyn_mlp"), r1.text)
      close(hl.array(r1.result.vals, "float32"), expected(5), 1e-5, "first child")
      env.DYN_N = "9"
      local r2 = child(MLP_CHILD, env)
      assert.are.equal(0, count_lines(r2.err, "halua: compiled dyn_mlp"), r2.text)
      has(r2.err, "halua: loaded dyn_mlp from the disk cache")
      assert(r2.result.disk_hits >= 1, r2.text)
      close(hl.array(r2.result.vals, "float32"), expected(9), 1e-5, "second child")
    end)
    os.execute("rm -rf " .. q(dir))
    assert(ok, e)
  end)

  it("HALUA_LOG_COMPILES says what is polymorphic, what is not and why a call is specialised", function()
    local r = child([==[
local hl = require "halua"
local x3, x4, x6 = hl.ones({3, 2}), hl.ones({4, 2}), hl.ones({6, 2})
local f = hl.jit(function(x) return hl.cumsum(x, 1) end, {dynamic_axes = {1}, name = "dyn_cumsum"})
f(x3); f(x4)
local g = hl.jit(function(x) local a, b = unpack(hl.split(x, 2)); return a + b end, {dynamic_axes = {1}, name = "dyn_split"})
g(x4); g(x6); pcall(g, x3)
local h = hl.jit(function(x, y) return x + y end, {dynamic_axes = {1}, name = "dyn_two"})
h(x3, x3)
local l = hl.jit(function(x) return hl.fori_loop(1, 3, function(i, c) return c * 2 + x end, x) end,
                 {dynamic_axes = {1}, name = "dyn_loop"})
l(x3); l(x4)
local tw = hl.jit(function(x) return hl.fori_loop(1, 3, function(i, c) return c * 2 end, hl.zeros({x.shape[1] * 2})) end,
                  {dynamic_axes = {1}, name = "dyn_twice"})
tw(x3); tw(x4)
io.write("RESULT return {}\n")
]==], {HALUA_LOG_COMPILES = "1", HALUA_CACHE_DIR = root .. "build/test-cache"})
    has(r.err, "halua: tracing dyn_cumsum polymorphic in b = axis 1 of x (signature 1|float32@0[b,2])")
    has(r.err, "halua: dyn_cumsum: not polymorphic: ")
    has(r.err, "; compiled for each size instead")
    has(r.err, "halua: dyn_cumsum: this call is specialised: ")
    has(r.err, "halua: tracing dyn_split polymorphic in b = axis 1 of x")
    -- (compiled, or loaded from the disk cache an earlier run filled: once either way)
    assert.are.equal(1, count_lines(r.err, "halua: compiled dyn_split") + count_lines(r.err, "halua: loaded dyn_split"), r.text)
    has(r.err, "halua: dyn_split: this call is specialised: the program does not serve these sizes")
    has(r.err, "halua: tracing dyn_two polymorphic in b = axis 1 of x (signature 2|float32@0[b,2]|float32@0[b,2])")
    has(r.err, "halua: tracing dyn_loop polymorphic in b = axis 1 of x")
    assert.is_nil(r.err:find("dyn_loop: not polymorphic", 1, true), r.err)
    assert.is_nil(r.err:find("dyn_loop: this call is specialised", 1, true), r.err)
    -- a body that sees the size only doubled says why it is compiled per size
    has(r.err, "halua: dyn_twice: not polymorphic: the body of fori_loop follows a dynamic size other than as an axis of "
               .. "its carries, scanned rows or the values it uses (a carry of 2 * b elements, say); compiled for each size instead")
  end)
end)
