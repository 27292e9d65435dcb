-- CUDA code generation, checked without a GPU: every primitive's GPU schedule lowers, and its
-- PTX assembles with the CUDA toolkit's ptxas for sm_90 (an H100). Skipped, saying so, where
-- the toolkit is absent.
local hl = require "halua"

local ptxas
for _, p in ipairs {os.getenv("PTXAS") or "", "/usr/local/cuda/bin/ptxas", "ptxas"} do
  if p ~= "" and os.execute(p .. " --version >/dev/null 2>&1") == 0 then
    ptxas = p
    break
  end
end

local function assemble(ptx)
  assert.truthy(ptx:find(".entry", 1, true), "no kernel in the PTX")
  -- a call into a function the module does not define assembles, but the driver refuses to load it
  local ext = ptx:match("%.extern%s+%.func[^\n]*")
  assert.is_nil(ext, "the PTX calls an undefined function: " .. tostring(ext))
  local path = os.tmpname()
  local fh = assert(io.open(path, "w"))
  fh:write(ptx)
  fh:close()
  local cmd = ptxas .. " -arch=sm_90 -o /dev/null " .. path .. " 2>&1"
  local p = io.popen(cmd)
  local out = p:read("*a")
  local ok = p:close()
  os.remove(path)
  assert.is_true(ok == true or ok == 0, "ptxas failed:\n" .. out)
end

-- the pipeline's kernels and those of its compiled loops' bodies and conditions
local function assembles(f, ...)
  local lowered = hl.jit(f, {device = "cuda"}):lower(...)
  assemble(lowered:ptx())
  for _, ptx in ipairs(lowered:loop_ptx()) do assemble(ptx) end
end

describe("CUDA code generation", function()
  if not ptxas then
    it("(skipped: no CUDA toolkit ptxas on this machine)", function() end)
    return
  end
  local x, y = hl.ones({37, 53}), hl.ones({37, 53})
  local xi = hl.ones({37, 53}, "int32")
  local xd = hl.ones({37, 53}, "float64")

  -- every primitive of a kind in one program per dtype (an output each): one compile and one
  -- ptxas run instead of one per primitive, a quarter of the time; a primitive whose code does not
  -- assemble still fails the program it is in, and ptxas names its kernel
  local function each(ops)
    return function(...)
      local r = {}
      for _, op in ipairs(ops) do r[op] = hl[op](...) end
      return r
    end
  end

  it("assembles every unary primitive", function()
    local unary = each({"neg", "abs", "sign", "square", "floor", "ceil", "round", "reciprocal", "exp", "expm1",
                        "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                        "cosh", "tanh", "erf", "isnan", "isinf", "isfinite", "logical_not"})
    assembles(unary, x)
    assembles(unary, xd)
  end)

  it("assembles every binary primitive, float and int", function()
    local ops = {"add", "sub", "mul", "div", "pow", "mod", "floor_divide", "maximum", "minimum", "atan2",
                 "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
    local float = each(ops)
    assembles(float, x, y)
    assembles(float, xd, xd)
    local int_ops = {}
    for _, op in ipairs(ops) do if op ~= "atan2" and op ~= "div" then int_ops[#int_ops + 1] = op end end
    assembles(each(int_ops), xi, xi)
    assembles(function(a, b) return hl.where(hl.gt(a, b), a, b) end, x, y)
    assembles(function(a) return a:astype("float64"):astype("uint8") end, x)
    local bits = each({"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"})
    assembles(bits, xi, xi)
    assembles(bits, xi:astype("int64"), xi:astype("int64"))
  end)

  it("assembles the random-number generator and a jitted gradient", function()
    assembles(function(k) return hl.random.uniform(k, {37, 53}), hl.random.normal(k, {99}) end, hl.random.key(1))
    assembles(hl.value_and_grad(function(w, a) return hl.sum(hl.tanh(hl.matmul(a, w)) ^ 2) end), hl.ones({53, 7}), x)
  end)

  it("assembles reductions over rows, columns and everything", function()
    for _, op in ipairs {"sum", "prod", "max", "min", "argmax", "argmin", "mean", "logsumexp"} do
      assembles(function(a) return hl[op](a, 1), hl[op](a, 2) end, x)
      if op ~= "argmax" and op ~= "argmin" then assembles(function(a) return hl[op](a) end, x) end
    end
    assembles(function(a) return hl.nn.softmax(a, 2) end, x)
  end)

  it("assembles matmul, plain and batched, and the shape primitives", function()
    assembles(function(a, b) return hl.matmul(a, b.T) end, x, y)
    assembles(function(a, b) return hl.matmul(a, b) end, hl.ones({4, 5, 6}), hl.ones({4, 6, 3}))
    assembles(function(a) return hl.reshape(a, {53, 37}) + 1, a.T * 2, a[{{2, 30, 3}, {-1, 1, -2}}] end, x)
    assembles(function(a, b) return hl.concatenate({a, b}, 2), hl.broadcast_to(a[1], {5, 53}) end, x, y)
    assembles(function(a) return hl.eye(5) + a[{{1, 5}, {1, 5}}] end, x)
  end)

  it("assembles gather and scatter_add (take and its gradient)", function()
    local idx = hl.array({3, 1, 3, 37}, "int32")
    assembles(function(a, i) return hl.take(a, i, 1), hl.take_along_axis(a[{{1, 4}}], hl.reshape(i, {4, 1}), 2) end, x, idx)
    assembles(function(a, i) return hl.grad(function(t) return hl.sum(hl.take(t, i, 2) ^ 2) end)(a) end, x, idx)
    assembles(function(a, i) return hl.core.scatter_add(a[1], i[1], 0, 9) end, x, idx)
  end)

  it("assembles scatter in every combine mode (x:at(index arrays)), its gradient and segment_max", function()
    local idx = hl.array({3, 1, 3, 37}, "int32")
    assembles(function(a, i)
      local r = a[{{1, 4}}]
      return r:at({i, {}}):set(1), r:at({{}, i}):add(a[{{1, 4}, {1, 4}}]), r:at(i):mul(2), r:at({i, 5}):min(0), r:at({-1, i}):max(3)
    end, x, idx)
    assembles(function(a, i) return hl.grad(function(t) return hl.sum(t:at({{}, i}):max(t[{{}, {1, 4}}] * 2) ^ 2) end)(a) end, x, idx)
    assembles(function(a, i) return hl.segment_max(a[{{1, 4}}], i, 5), hl.dynamic_slice(a, {i[1], i[2]}, {2, 3}) end, x, idx)
  end)

  it("assembles compiled loops: fori_loop, while_loop, scan, nested, their gradients and tangents", function()
    local v = hl.ones({53})
    assembles(function(a) return hl.fori_loop(1, 100, function(i, c) return c * 0.5 + i end, a) end, x)
    assembles(function(a) return hl.while_loop(function(c) return hl.lt(hl.sum(c), 1e6) end, function(c) return c * 3 end, a) end, x)
    assembles(function(a, xs) return hl.scan(function(c, r) return c + r, hl.tanh(c) end, a, xs) end, v, x)
    assembles(function(a) return hl.fori_loop(1, 10, function(_, c) return hl.fori_loop(1, 10, function(_, d) return d * 2 end, c) - 1 end, a) end, x)
    assembles(hl.grad(function(a) return hl.sum(hl.fori_loop(1, 100, function(_, c) return hl.sin(c) * a end, a)) end), x)
    assembles(hl.grad(function(a, xs) return hl.sum(select(2, hl.scan(function(c, r) return c * r, c end, a, xs))) end), v, x)
    assembles(function(a, t) return hl.jvp(function(p) return hl.fori_loop(1, 100, function(_, c) return hl.sin(c) * p end, p) end, {a}, {t}) end, x, y)
    assembles(function(a, t) return hl.jvp(function(p) return hl.while_loop(function(c) return hl.lt(hl.sum(c), 1e6) end, function(c) return c * p end, p) end, {a}, {t}) end, x, y)
  end)

  -- the kernels around the fft stage (cuFFT's where it loads): its operand made on the device,
  -- its output read whole, in part (the real parts alone) and by its gradient
  it("assembles pipelines around fft", function()
    assembles(function(a, b) return hl.abs(hl.fft.fft(hl.complex(a, b) * 2)) end, x, y)
    assembles(function(a) return hl.real(hl.fft.ifft2(hl.fft.rfft(a * a, 64))) end, xd)
    assembles(hl.grad(function(a) return hl.sum(hl.abs(hl.fft.fft(a, nil, 1)) ^ 2) end), x)
  end)

  -- a reduction's conversion back from its accumulator gets a buffer where a host stage reads it
  -- (Halide refuses an inlined input of an extern stage)
  it("assembles host stages (sort, argsort, linalg) fed by reductions, and a gradient through them", function()
    local m = hl.array({{{2, 1}, {0, 1}}, {{1, 0}, {1, 3}}})
    assembles(function(v) return hl.sort(v:sum(2)) end, x)
    assembles(function(v) return hl.argsort(v:max(2)) end, x)
    assembles(function(v) return hl.linalg.inv(v:sum(3)) end, m)
    assembles(hl.grad(function(v) return hl.sum(hl.sort(v:sum(2)) ^ 2) end), x)
  end)

  -- an input the host code reads (a 0-d index in a stage's bounds, a condition Halide hoisted out
  -- of the GPU loops) is copied to the host before anything runs (hl_host_reads.h)
  it("gives the inputs a pipeline's host code reads a host copy, and no other", function()
    local function copies(f, ...)
      local stmt = hl.jit(f, {device = "cuda"}):lower(...):stmt()
      local names = {}
      for name in stmt:gmatch("hl_input_host_copy%(%(halide_buffer_t %*%)(in%d+)%.buffer%)") do names[#names + 1] = name end
      return table.concat(names, " ")
    end
    local x3, row = hl.ones({4, 5, 6}, "float64"), hl.ones({6}, "float64")
    assert.are.equal("in1", copies(function(p, k, r) return p:at({k}):set(r) end, x3, hl.array(-2, "int32"), row))
    assert.are.equal("in1", copies(hl.nn.cross_entropy, hl.array({{1e4, -1e4}}), hl.array({1}, "int32")))
    assert.are.equal("", copies(function(p, q) return hl.tanh(p) * q end, x, y))
    assembles(function(p, k, r) return p:at({k}):set(r) end, x3, hl.array(-2, "int32"), row)
  end)

  -- a buffer computed on the GPU that host code reads (the condition with which Halide skips a
  -- stage a select does not use) is copied to the host once produced; Halide 14 read its stale
  -- host memory, and nanvar of a 0-d array gave -6.4 on a first call (hl_host_reads.h)
  it("copies a GPU-computed buffer that host code reads to the host once it is produced", function()
    local function scratch_copies(f, ...)
      local stmt = hl.jit(f, {device = "cuda"}):lower(...):stmt()
      local n = 0
      for line in stmt:gmatch("[^\n]+") do
        -- the pass's copies are bare calls; Halide's own are let-bound with a checked result
        if line:match("^%s*halide_copy_to_host%(") then n = n + 1 end
      end
      return n
    end
    assert.is_true(scratch_copies(function(q) return hl.nanvar(q) end, hl.array(0, "int32")) >= 1)
    assert.are.equal(0, scratch_copies(function(p, q) return hl.tanh(p) * q + 1, hl.sum(p * q, 1) end, x, y))
    assembles(function(q) return hl.nanvar(q) end, hl.array(0, "int32"))
  end)

  -- dynamic_axes: one CUDA program for every size, its kernels' extents read from the buffers
  it("assembles polymorphic programs (dynamic_axes), their compiled loops and gradients", function()
    local function poly(f, ...)
      local lowered = hl.jit(f, {device = "cuda", dynamic_axes = {1}}):lower(...)
      assert.truthy(lowered:ir():find("float32[b,", 1, true), "the program is not polymorphic:\n" .. lowered:ir())
      assemble(lowered:ptx())
      for _, ptx in ipairs(lowered:loop_ptx()) do assemble(ptx) end
      return lowered
    end
    poly(function(p) return hl.tanh(p) * 2 + hl.sum(p, 1, true), hl.matmul(p, y.T), p[{{2, -2}}] end, x)
    poly(function(p) return hl.fori_loop(1, 4, function(i, c) return c * 0.5 + p * i end, p) end, x)
    poly(function(p)
      return hl.grad(function(t) return hl.sum(select(2, hl.scan(function(c, r) return c * 0.9 + r, c * r end, t[1] * 0, t))) end)(p)
    end, x)
  end)

  -- float16 and bfloat16 are uint16 bit patterns computed in float32: no Halide bfloat16 reaches
  -- the CUDA code generator (whose bfloat16 support in Halide 14 is broken)
  it("assembles float16, bfloat16 and int8 pipelines", function()
    for _, d in ipairs {"float16", "bfloat16", "int8"} do
      local a, b = x:astype(d), y:astype(d)
      assembles(function(p, q) return hl.exp(p) * q + 1, hl.maximum(p, q), hl.lt(p, q) end, a, b)
      assembles(function(p) return hl.sum(p, 2), hl.max(p), hl.prod(p, 1), p:astype("float32"), x:astype(d) end, a)
      assembles(function(p, q) return hl.matmul(p, q.T), hl.transpose(p), hl.concatenate({p, q}, 1) end, a, b)
      if d ~= "int8" then
        assembles(function(p) return hl.grad(function(t) return hl.sum(hl.tanh(t)) end)(p) end, a)
        assembles(function(p) return hl.mean(p), hl.nn.softmax(p), p:astype("bfloat16"), p:astype("float16") end, a)
        assembles(function(p) return hl.fori_loop(1, 3, function(_, c) return c * 2 + 1 end, p * 1) end, a)
      end
    end
  end)
end)
