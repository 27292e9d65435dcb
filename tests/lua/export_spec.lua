-- hl.export: a jitted function as a standalone C library. Each test exports into a fresh
-- temporary directory, builds a C program against the library (support/export_driver.c) with
-- the system's C compiler, runs it on the same inputs, and compares its outputs with halua's.
local hl = require "halua"
local root = debug.getinfo(1, "S").source:match("^@(.*/)tests/lua/") or "./"
local driver = root .. "tests/lua/support/export_driver.c"

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  local ok = p:close()
  return ok == true or ok == 0, out
end

local dirs = {}
local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(sh("mkdir -p " .. q(d)))
  dirs[#dirs + 1] = d
  return d
end
local function cleanup()
  for _, d in ipairs(dirs) do sh("rm -rf " .. q(d)) end
  dirs = {}
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local read = require("support.files").read_bytes

-- Exports f for args into dir/name, builds the driver against lib<name>.a (or the .so), runs it
-- on args and returns the outputs it wrote (arrays), with halua's own results (flattened).
local function run_exported(f, args, opts)
  opts = opts or {}
  local dir = opts.dir or (tmpdir() .. "/lib")
  local name = opts.name or "fn"
  hl.export(f, args, dir, name)
  local expected = {}
  local jf = hl.jit(f)
  for _, r in ipairs({jf(unpack(args, 1, table.maxn(args)))}) do
    for _, leaf in ipairs(hl.tree.leaves(r)) do expected[#expected + 1] = leaf end
  end
  local ins, outs = {}, {}
  local inputs = {}
  for _, a in ipairs(args) do
    for _, leaf in ipairs(hl.tree.leaves(a)) do
      if type(leaf) == "userdata" then inputs[#inputs + 1] = leaf end
    end
  end
  for i, a in ipairs(inputs) do
    ins[i] = dir .. "/in" .. i .. ".npy"
    hl.save(ins[i], a)
  end
  for k, e in ipairs(expected) do
    outs[k] = dir .. "/out" .. k .. ".npy"
    hl.save(outs[k], hl.zeros_like(e))
  end
  local U = name:upper()
  local lib = opts.shared and ("-L" .. q(dir) .. " -l" .. name .. " -Wl,-rpath," .. q(dir)) or
              (q(dir .. "/lib" .. name .. ".a") .. " -lm -lpthread -ldl" .. (opts.lapack and " -llapack" or ""))
  local exe = dir .. "/run"
  local ok, out = sh(string.format("cc -O1 -DFN=%s -DFN_NUM_INPUTS=%s_NUM_INPUTS -DFN_NUM_OUTPUTS=%s_NUM_OUTPUTS -include %s %s %s -o %s",
                                   name, U, U, q(dir .. "/" .. name .. ".h"), q(driver), lib, q(exe)))
  assert(ok, out)
  local qi, qo = {}, {}
  for i, p in ipairs(ins) do qi[i] = q(p) end
  for k, p in ipairs(outs) do qo[k] = q(p) end
  ok, out = sh(q(exe) .. " " .. table.concat(qi, " ") .. " -- " .. table.concat(qo, " "))
  assert(ok, out)
  local got = {}
  for k, p in ipairs(outs) do got[k] = hl.load(p) end
  return got, expected, dir, exe
end

local function assert_same(got, expected, tol)
  assert.are.equal(#expected, #got)
  for k = 1, #expected do
    local e, g = expected[k], got[k]
    assert.are.equal(e.dtype, g.dtype)
    assert.are.same(e.shape, g.shape)
    local what = "output " .. k .. ":\n" .. tostring(g) .. "\nexpected\n" .. tostring(e)
    if tol and e.dtype:match("float") then
      local ef, gf = e:astype("float64"), g:astype("float64")
      local err = hl.max(hl.abs(gf - ef)):item()
      assert.is_true(err <= tol * (1 + hl.max(hl.abs(ef)):item()), what)
    else
      assert.are.same(e:totable(), g:totable(), what)
    end
  end
end

describe("hl.export", function()
  after_each(cleanup)

  it("writes NAME.h, libNAME.a and libNAME.so, with the entry point and the count macros in capitals", function()
    local dir = tmpdir() .. "/out"
    hl.export(function(x, y) return x * y + 1, hl.sum(x) end, {hl.ones({2, 3}), hl.ones({2, 3})}, dir, "mlp_predict")
    for _, f in ipairs({"mlp_predict.h", "libmlp_predict.a", "libmlp_predict.so"}) do
      assert.is_true(exists(dir .. "/" .. f), f)
    end
    local h = read(dir .. "/mlp_predict.h")
    assert.truthy(h:find("int mlp_predict(const void *const *inputs, void *const *outputs);", 1, true))
    assert.truthy(h:find("#define MLP_PREDICT_NUM_INPUTS 2\n", 1, true))
    assert.truthy(h:find("#define MLP_PREDICT_NUM_OUTPUTS 2\n", 1, true))
    assert.truthy(h:find("float32 [2, 3]", 1, true))
    -- no working files are left behind
    local ok, listing = sh("ls -A " .. q(dir))
    assert.is_true(ok)
    assert.are.equal("libmlp_predict.a\nlibmlp_predict.so\nmlp_predict.h\n", listing)
    -- the one global symbol the static library defines is the entry point
    local _, syms = sh("nm -g --defined-only " .. q(dir .. "/libmlp_predict.a") .. " | awk 'NF == 3 {print $3}'")
    assert.are.equal("mlp_predict\n", syms)
  end)

  it("computes what the jitted function computes: pytrees in and out, captured constants embedded", function()
    local scale = hl.array({{1, -2, 3}}, "float32")
    local function f(x, p)
      local h = hl.tanh(hl.matmul(x, p.w) + p.b) * scale
      return {h = h, total = hl.sum(h, 1)}, hl.max(x)
    end
    local x = hl.random.normal(hl.random.key(1), {5, 4})
    local p = {w = hl.random.normal(hl.random.key(2), {4, 3}), b = hl.array({0.1, 0.2, 0.3}, "float32")}
    local got, expected = run_exported(f, {x, p})
    assert_same(got, expected, 1e-5)
  end)

  it("links as a shared library too, and neither needs Lua, LLVM or Halide (ldd)", function()
    local got, expected, dir, exe = run_exported(function(x) return hl.exp(x) - 1 end, {hl.arange(6):astype("float32")}, {shared = true})
    assert_same(got, expected, 1e-6)
    for _, bin in ipairs({exe, dir .. "/libfn.so"}) do
      local ok, ldd = sh("env -u LD_PRELOAD ldd " .. q(bin))   -- (not the sanitizers' preloads)
      assert.is_true(ok, ldd)
      for _, bad in ipairs({"luajit", "Halide", "LLVM", "halua_core", "libhalua.so", "stdc++"}) do
        assert.falsy(ldd:find(bad, 1, true), bin .. " links " .. bad .. ":\n" .. ldd)
      end
    end
  end)

  it("carries sort, argsort, linalg (LAPACK), transposes and matmuls into the library", function()
    local a = hl.array({{4, 1, 0}, {1, 3, 1}, {0, 1, 2}}, "float64")
    local b = hl.array({{1, 2}, {2, 0}, {3, -1}}, "float64")
    local v = hl.array({{3, 1, 2, 5, 4}, {0, -1, 7, 7, 2}}, "float32")
    local function f(m, r, s)
      return hl.linalg.solve(m, r), hl.linalg.cholesky(m), hl.sort(s, 2), hl.argsort(s, 1), hl.transpose(m), hl.matmul(m, r)
    end
    local got, expected = run_exported(f, {a, b, v}, {lapack = true})
    assert_same(got, expected, 1e-12)
    assert.truthy(read(dirs[1] .. "/lib/fn.h"):find("-llapack", 1, true))
  end)

  it("carries the decompositions (qr, svd, eigh, slogdet: one packed LAPACK stage each) and solve_triangular into the library", function()
    local a = hl.array({{4, 1, 0}, {1, 3, 1}, {0, 1, 2}}, "float64")
    local b = hl.array({{1, 2}, {2, 0}, {3, -1}, {1, 1}}, "float64")
    local function f(m, r)
      local q, rr = hl.linalg.qr(r)
      local _, s = hl.linalg.svd(r, false)
      local w, v = hl.linalg.eigh(m)
      return hl.matmul(q, rr), s, w, hl.abs(v), hl.linalg.det(m), hl.linalg.solve_triangular(m, m, {lower = true, trans = "T"})
    end
    local got, expected = run_exported(f, {a, b}, {lapack = true})
    assert_same(got, expected, 1e-12)
  end)

  it("carries Fourier transforms (fft, rfft, irfft, fft2) and complex values inside the function into the library", function()
    local x = hl.reshape(hl.sin(hl.arange(24, "float64") * 0.7), {4, 6})
    local y = hl.cos(hl.arange(10, "float32") * 0.3)
    local function f(a, b)
      local z = hl.fft.fft2(a) * hl.complex(0.5, 0.25)
      return hl.real(z), hl.imag(hl.fft.ifft(z, nil, 1)), hl.abs(hl.fft.rfft(b, 7)), hl.fft.irfft(hl.fft.rfft(b), 10)
    end
    local got, expected = run_exported(f, {x, y})
    assert_same(got, expected, 1e-5)
    -- and against known values: irfft(rfft(b)) is b
    assert.is_true(hl.max(hl.abs(got[4] - y)):item() < 1e-5)
  end)

  it("refuses complex arguments and results, naming their parts as the way out", function()
    local z = hl.complex(hl.array({1, 2}), hl.array({3, 4}))
    local ok, err = pcall(hl.export, function(v) return hl.real(v) end, {z}, tmpdir() .. "/lib", "fn")
    assert.is_false(ok)
    assert.truthy(err:find("halua: export: complex arguments are not supported yet", 1, true), err)
    ok, err = pcall(hl.export, function(v) return hl.fft.fft(v) end, {hl.array({1, 2})}, tmpdir() .. "/lib", "fn")
    assert.is_false(ok)
    assert.truthy(err:find("halua: export: complex results are not supported yet", 1, true), err)
  end)

  it("carries compiled loops: fori_loop, while_loop and scan, nested, with captured values", function()
    local w = hl.array({0.5, -0.25, 1}, "float32")
    local function f(x, xs)
      local s = hl.fori_loop(1, 7, function(i, c) return c * 0.9 + i:astype("float32") * w + x end, hl.zeros(3))
      local n = hl.while_loop(function(c) return c[1]:lt(1000) end, function(c) return {c[1] * 3 + 1, c[2] + 1} end,
                              {hl.array(1, "int32"), hl.array(0, "int32")})
      local total, partial = hl.scan(function(c, row)
        local inner = hl.fori_loop(1, 3, function(_, d) return d + row end, c)
        return inner * 0.5, hl.sum(inner) + x[1]
      end, x, xs)
      return s, n[1], n[2], total, partial
    end
    local x = hl.array({1, 2, 3}, "float32")
    local xs = hl.random.uniform(hl.random.key(3), {4, 3})
    local got, expected = run_exported(f, {x, xs})
    assert_same(got, expected, 1e-5)
    -- the reverse loops of a loop's gradient go in too
    local function g(p, rows)
      local c, ys = hl.scan(function(c, r) local n = hl.sin(c * p + r) return n, hl.sum(n) end, p, rows)
      return hl.sum(c) + hl.sum(ys)
    end
    local got2, expected2 = run_exported(hl.grad(g), {x, xs})
    assert_same(got2, expected2, 1e-5)
  end)

  it("exports derivatives and batched functions: hl.grad, hl.value_and_grad, hl.vmap", function()
    local function loss(w, x) return hl.sum(hl.tanh(hl.matmul(x, w)) ^ 2) end
    local w = hl.random.normal(hl.random.key(4), {3, 2})
    local x = hl.random.normal(hl.random.key(5), {6, 3})
    local got, expected = run_exported(hl.value_and_grad(loss), {w, x})
    assert_same(got, expected, 1e-5)
    -- and the gradient agrees with finite differences
    local g = got[2]:totable()
    local eps = 1e-3
    local w64, x64 = w:astype("float64"), x:astype("float64")
    for _, ij in ipairs({{1, 1}, {3, 2}}) do
      local bump = hl.zeros({3, 2}, "float64"):at({ij[1], ij[2]}):set(eps)
      local fd = (loss(w64 + bump, x64):item() - loss(w64 - bump, x64):item()) / (2 * eps)
      assert.is_true(math.abs(fd - g[ij[1]][ij[2]]) < 1e-3, ("d/dw[%d][%d]: %g vs %g"):format(ij[1], ij[2], fd, g[ij[1]][ij[2]]))
    end
    local got2, expected2 = run_exported(hl.vmap(function(r) return hl.sum(r * r) end), {x})
    assert_same(got2, expected2, 1e-6)
  end)

  it("handles int, bool, float64 and float16 arrays and 0-d results", function()
    local function f(i, m, d, h)
      return i * 3 - 1, hl.logical_not(m), hl.sqrt(d), h * 2, hl.sum(i)
    end
    local got, expected = run_exported(f, {hl.array({1, 2, 3}, "int32"), hl.array({true, false}), hl.array({2, 9}, "float64"),
                                           hl.array({0.5, 1.5}, "float16")})
    assert_same(got, expected)
  end)

  it("computes in IEEE arithmetic, as under jit: float terms that cancel are NaN for inf and NaN", function()
    -- (with a float16 product, which Halide computes itself with fused multiply-adds)
    local ieee = require "support.ieee_terms"
    local h = (hl.arange(6):reshape({2, 3}) * 0.25 - 0.5):astype("float16")
    local w = (hl.arange(6):reshape({3, 2}) * 0.5 + 1):astype("float16")
    local function f(a, p, q)
      local t1, t2, t3, t4 = ieee.terms(a)
      return t1, t2, t3, t4, hl.matmul(p, q)
    end
    local got = run_exported(f, {ieee.x, h, w})
    ieee.check(got, "exported")
    assert.are.same(hl.matmul(h, w):totable(), got[5]:totable())
  end)

  it("bakes numbers and static arguments in; takes a jitted function and its static_argnums", function()
    local jf = hl.jit(function(x, k, opts) return x * k + opts.shift end, {static_argnums = 3})
    local got, expected = run_exported(jf, {hl.array({1, 2}, "float32"), 3, {shift = 10}})
    assert_same(got, expected)
    assert.are.same({13, 16}, got[1]:totable())
  end)

  it("names the library after the directory when no name is given, and replaces an earlier export", function()
    local base = tmpdir()
    hl.export(function(x) return x + 1 end, {hl.ones(3)}, base .. "/my-model.v2/")
    assert.is_true(exists(base .. "/my-model.v2/my_model_v2.h"))
    hl.export(function(x) return x + 1 end, {hl.ones(3)}, base .. "/2d")
    assert.is_true(exists(base .. "/2d/_2d.h"))
    -- a second export of the same name replaces the three files
    hl.export(function(x) return x + 2 end, {hl.ones(5)}, base .. "/2d", "_2d")
    assert.truthy(read(base .. "/2d/_2d.h"):find("float32 [5]", 1, true))
  end)

  it("raises clear errors naming export", function()
    local d = tmpdir()
    local function err(...)
      local ok, e = pcall(hl.export, ...)
      assert.is_false(ok)
      return tostring(e)
    end
    local x = hl.ones(3)
    local id = function(a) return a * 2 end
    assert.truthy(err(42, {x}, d):find("halua: export: expected a function or a jitted function, got number", 1, true))
    assert.truthy(err(id, x, d):find("halua: export: args must be a list of the function's arguments", 1, true))
    assert.truthy(err(id, {x}, 7):find("halua: export: dir must be a directory path, got number", 1, true))
    assert.truthy(err(id, {x}, d, "bad name"):find("halua: export: the name must be a C identifier", 1, true))
    assert.truthy(err(id, {x}, d, "9lives"):find("halua: export: the name must be a C identifier", 1, true))
    assert.truthy(err(id, {x}, d, 5):find("halua: export: name must be a string, got number", 1, true))
    assert.truthy(err(function(a) return a, hl.ones(2) end, {x}, d, "f"):find(
      "halua: export: result 2 does not depend on the arguments (a constant array)", 1, true))
    assert.truthy(err(function() return 1 end, {}, d, "f"):find("halua: export: result 1 does not depend on the arguments (a number)", 1, true))
    assert.truthy(err(hl.jit(id, {device = "cuda"}), {x}, d, "f"):find("halua: export: ", 1, true))
    -- the traced function's own error comes through as it is
    assert.truthy(err(function() error("halua: mine: broken", 0) end, {x}, d, "f"):find("halua: mine: broken", 1, true))
    -- a file where the directory should be
    local file = d .. "/plain"
    assert(io.open(file, "w")):close()
    assert.truthy(err(id, {x}, file .. "/sub", "f"):find("halua: export: cannot create the directory", 1, true))
  end)

  it("reports a missing C compiler as a clear error", function()
    local d = tmpdir()
    local ok, out = sh(string.format("cd %s && PATH=/nonexistent %s -e %s", q(root), "$(command -v luajit)",
      q([[local hl = require "halua"; local ok, e = pcall(hl.export, function(x) return x + 1 end, {hl.ones(2)}, "]] .. d .. [[/o", "f"); print(e)]])))
    assert.is_true(ok, out)
    assert.truthy(out:find("halua: export: cannot run cc", 1, true), out)
    assert.truthy(out:find("build-essential", 1, true), out)
  end)
end)
