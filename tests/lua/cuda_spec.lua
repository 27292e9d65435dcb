-- CUDA: the same answers as the CPU. Runs where a GPU is present; elsewhere it checks the
-- device-selection errors and says the GPU part was skipped.
local hl = require "halua"

local function max_abs_diff(a, b)
  local ta, tb = hl.flatten(a:to("cpu")):totable(), hl.flatten(b:to("cpu")):totable()
  assert.are.equal(#tb, #ta)
  local m = 0
  for i = 1, #ta do
    local x, y = ta[i], tb[i]
    if type(x) == "boolean" then x, y = x and 1 or 0, y and 1 or 0 end
    if x ~= x or y ~= y then
      assert.is_true(x ~= x and y ~= y, "NaN in one result only at " .. i)
    elseif x ~= y then
      m = math.max(m, math.abs(x - y) / math.max(1, math.abs(y)))
    end
  end
  return m
end

local have_cuda = #hl.devices() > 1

describe("devices without a GPU", function()
  it("lists the cpu first and names the device of an array", function()
    assert.are.equal("cpu", hl.devices()[1])
    assert.are.equal("cpu", hl.device_put(hl.ones({2}), "cpu").device)
  end)
  it("refuses unknown devices with a clear error", function()
    local ok, err = pcall(hl.device_put, hl.ones({2}), "tpu")
    assert.is_false(ok)
    assert.truthy(err:find("^halua: device_put: unknown device tpu"))
  end)
  if not have_cuda then
    it("says there is no CUDA device when asked for one", function()
      local ok, err = pcall(hl.device_put, hl.ones({2}), "cuda")
      assert.is_false(ok)
      assert.truthy(err:find("^halua: device_put: no CUDA device here"))
      ok, err = pcall(hl.default_device, "cuda")
      assert.is_false(ok)
      assert.truthy(err:find("no CUDA device here"))
    end)
    it("(the CUDA comparisons are skipped: no GPU on this machine)", function() end)
  end
end)

if not have_cuda then return end

describe("CUDA gives the CPU's answers", function()
  math.randomseed(7)
  local function rand(shape, lo, hi)
    local n = 1
    for _, e in ipairs(shape) do n = n * e end
    local v = {}
    for i = 1, n do v[i] = lo + (hi - lo) * math.random() end
    return hl.reshape(hl.array(v), shape):to("cpu")   -- on the host even when HALUA_DEVICE=cuda
  end
  local x, y = rand({37, 53}, -2, 2), rand({37, 53}, 0.1, 3)
  local gx, gy = x:to("cuda"), y:to("cuda")

  it("moves arrays both ways unchanged", function()
    assert.are.equal("cuda:1", gx.device)
    assert.are.equal(0, max_abs_diff(gx, x))
    assert.are.equal("cpu", gx:to("cpu").device)
  end)

  it("runs elementwise ops, broadcasting and scalars on the GPU", function()
    for _, f in ipairs {
      function(a, b) return a * b + 1 end,
      function(a, b) return hl.tanh(a) / b end,
      function(a, b) return hl.exp(a) - hl.log(b) end,
      function(a, b) return hl.where(hl.gt(a, 0), a, b) end,
      function(a) return hl.sqrt(hl.abs(a)) + a[{{}, {1, 1}}] end,
      function(a) return (a * 3):astype("int32") % 4 end,
    } do
      local g = f(gx, gy)
      assert.are.equal("cuda:1", g.device)
      assert.is_true(max_abs_diff(g, f(x, y)) < 1e-5)
    end
  end)

  it("reduces along any axes and over everything", function()
    assert.is_true(max_abs_diff(hl.sum(gx, 1), hl.sum(x, 1)) < 1e-5)
    assert.is_true(max_abs_diff(hl.max(gx, 2), hl.max(x, 2)) < 1e-6)
    assert.is_true(max_abs_diff(hl.sum(gx), hl.sum(x)) < 1e-5)
    assert.is_true(max_abs_diff(hl.argmax(gx, 2), hl.argmax(x, 2)) == 0)
    assert.is_true(max_abs_diff(hl.nn.softmax(gx, 2), hl.nn.softmax(x, 2)) < 1e-5)
    local big = rand({1000, 1000}, 0, 1)
    assert.is_true(max_abs_diff(hl.sum(big:to("cuda")), hl.sum(big)) < 1e-4)
  end)

  it("multiplies matrices, batched too", function()
    local a, b = rand({3, 65, 40}, -1, 1), rand({3, 40, 33}, -1, 1)
    assert.is_true(max_abs_diff(hl.matmul(a:to("cuda"), b:to("cuda")), hl.matmul(a, b)) < 1e-5)
    assert.is_true(max_abs_diff(hl.matmul(gx, gy.T), hl.matmul(x, y.T)) < 1e-5)
  end)

  it("compiles jitted functions for the GPU and keeps results there", function()
    local f = hl.jit(function(a, b) return hl.sum(hl.tanh(hl.matmul(a, b.T)) * 2, 2), a * 0 + 5 end)
    local g1, g2 = f(gx, gy)
    local c1, c2 = f(x, y)
    assert.are.equal("cuda:1", g1.device)
    assert.is_true(max_abs_diff(g1, c1) < 1e-4)
    assert.is_true(max_abs_diff(g2, c2) == 0)
  end)

  it("draws the CPU's random bits, eagerly and under jit", function()
    local R = hl.random
    local key, gkey = R.key(42), R.key(42):to("cuda")
    local draw = hl.jit(function(k) return R.bits(k, {3, 333}), R.uniform(k, {1000}), R.normal(k, {1000}, "float64") end)
    local b, u, n = draw(gkey)
    assert.are.equal("cuda:1", u.device)
    assert.are.equal(0, max_abs_diff(b, R.bits(key, {3, 333})))
    assert.are.equal(0, max_abs_diff(u, R.uniform(key, {1000})))
    assert.is_true(max_abs_diff(n, R.normal(key, {1000}, "float64")) < 1e-12)
    assert.are.equal(0, max_abs_diff(R.split(gkey, 3), R.split(key, 3)))
  end)

  it("differentiates a jitted loss on the GPU as on the CPU", function()
    local function loss(p, a) return hl.sum(hl.tanh(hl.matmul(a, p.w) + p.b) ^ 2) end
    local p = {w = rand({53, 7}, -0.5, 0.5), b = rand({7}, -1, 1)}
    local gp = {w = p.w:to("cuda"), b = p.b:to("cuda")}
    local step = hl.jit(hl.value_and_grad(loss))
    local lg, gg = step(gp, gx)
    local lc, gc = step(p, x)
    assert.are.equal("cuda:1", gg.w.device)
    assert.is_true(max_abs_diff(lg, lc) < 1e-4)
    assert.is_true(max_abs_diff(gg.w, gc.w) < 1e-4)
    assert.is_true(max_abs_diff(gg.b, gc.b) < 1e-4)
  end)

  it("reduces everything under jit and broadcasts the result back", function()
    for i, f in ipairs {
      function(a) return hl.sum(a) end,
      function(a) return a * hl.sum(a) end,
      function(a) return hl.sum(a) + hl.prod(a / 2) end,
      function(a) return hl.sum(hl.eq(hl.floor(a), 0):astype("int32")) end,
      function(a) return a - hl.max(a) end,
      function(a) return hl.exp(a - hl.max(a)) / hl.sum(hl.exp(a - hl.max(a))) end,
      function(a) return hl.logsumexp(a) end,
      function(a) return hl.grad(function(v) return hl.prod(v / 2) end)(a) end,
      function(a) return hl.grad(function(v) return hl.logsumexp(v) end)(a) end,
      -- a select on a full count (prod's derivative): Halide reads such scalars on the host
      function(a)
        local is0 = hl.eq(hl.floor(a), 0)
        local count = hl.sum(is0:astype("int32"))
        return hl.where(hl.eq(count, 0), hl.prod(a) / a, hl.where(is0, hl.prod(hl.where(is0, 1, a)), 0))
      end,
    } do
      local small = x[{{1, 5}, {1, 4}}]
      local jf = hl.jit(f)
      local d = max_abs_diff(jf(small:to("cuda")), jf(small))
      assert.is_true(d < 1e-5, "case " .. i .. " differs by " .. d)
    end
  end)

  it("multiplies views cuBLAS cannot read in place, and blocks of products", function()
    local a, b = rand({6, 8}, -1, 1), rand({8, 5}, -1, 1)
    local ga, gb = a:to("cuda"), b:to("cuda")
    local cases = {
      function(p, q) return hl.matmul(p[{{1, 6, 2}, {1, 8, 2}}], q[{{1, 8, 2}}]) end,   -- steps in both axes
      function(p, q) return hl.matmul(p.T, p) end,                                       -- a transposed operand
      function(p, q) return hl.matmul(hl.broadcast_to(p[{{1, 1}}], {4, 8}), q) end,      -- broadcast rows
      function(p, q) return hl.matmul(hl.broadcast_to(p, {3, 6, 8}), q) end,             -- broadcast batch
      function(p, q) return hl.matmul(p, q)[{{2, 4}, {3, 5}}] end,                        -- a block of the product
    }
    for i, f in ipairs(cases) do
      local want = f(a, b)
      assert.is_true(max_abs_diff(f(ga, gb), want) < 1e-5, "eager case " .. i)
      assert.is_true(max_abs_diff(hl.jit(f)(ga, gb), want) < 1e-5, "jit case " .. i)
    end
  end)

  it("keeps NaN in maximum and minimum and rounds float64 half to even", function()
    local a = hl.array({0 / 0, 1, -math.huge, 2.5, -0.5})
    local b = hl.array({1, 0 / 0, 0 / 0, 0.5, 1.5})
    for _, f in ipairs {hl.maximum, hl.minimum} do
      assert.are.equal(0, max_abs_diff(f(a:to("cuda"), b:to("cuda")), f(a, b)))
    end
    local h = hl.array({0.5, 1.5, 2.5, -0.5, -2.5, 3.7}, "float64")
    assert.are.equal(0, max_abs_diff(hl.round(h:to("cuda")), hl.round(h)))
    -- a zero keeps its sign, as NumPy's does: 1 / round(-0.4) is -inf
    local z = hl.round(hl.array({-0.4, 0.4, -0.0, -0.5}, "float64"):to("cuda")):to("cpu"):totable()
    assert.are.same({-math.huge, math.huge, -math.huge, -math.huge}, {1 / z[1], 1 / z[2], 1 / z[3], 1 / z[4]})
  end)

  it("sorts and solves inside a jitted GPU pipeline (host stages)", function()
    local a = rand({4, 4}, -1, 1) + hl.eye(4):to("cpu") * 4
    local v = rand({4, 3}, -1, 1)
    local f = hl.jit(function(p, q) return hl.linalg.solve(p * 1, q) * 2, hl.sort(q, 1) + 1, hl.linalg.cholesky(hl.matmul(p, p.T)) end)
    local g1, g2, g3 = f(a:to("cuda"), v:to("cuda"))
    local c1, c2, c3 = f(a, v)
    assert.are.equal("cuda:1", g1.device)
    assert.is_true(max_abs_diff(g1, c1) < 1e-4)
    assert.are.equal(0, max_abs_diff(g2, c2))
    assert.is_true(max_abs_diff(g3, c3) < 1e-4)
  end)

  -- Halide evaluates these on the host from an input's values: the input gets a host copy first
  -- (hl_host_reads.h); without it the host code read device memory and the process crashed
  it("runs pipelines whose host code reads an input: a 0-d index, a hoisted label check, a median", function()
    local x3, row = rand({4, 5, 6}, -1, 1), rand({6}, -1, 1)
    local i = hl.array(-2, "int32"):to("cpu")
    local set = hl.jit(function(p, k, r) return p:at({k}):set(r) end)
    assert.are.equal(0, max_abs_diff(set(x3:to("cuda"), i:to("cuda"), row:to("cuda")), set(x3, i, row)))
    local logits, labels = hl.array({{1e4, -1e4}, {0.5, 2}}):to("cpu"), hl.array({1, 2}, "int32"):to("cpu")
    local xent = hl.jit(hl.nn.cross_entropy)
    assert.is_true(max_abs_diff(xent(logits:to("cuda"), labels:to("cuda")), xent(logits, labels)) < 1e-5)
    local median = hl.jit(function(p) return hl.median(p, 2) end)
    assert.is_true(max_abs_diff(median(x3[1]:to("cuda")), median(x3[1])) < 1e-6)
  end)

  -- device results are collected at a pace of their own (hl_lua_value.c): often enough that
  -- discarded results stay bounded, rarely enough that a loop of mid-sized GPU ops is not mostly
  -- collections (it was one 0.3 ms collection per 64 MiB result)
  it("collects discarded device results in batches (24 blocks, or 1/64 of the GPU), not every call", function()
    local x = hl.full({2 ^ 24}, 0.5):to("cuda")   -- 64 MiB
    local copy = hl.jit(function(u) return u + 0 end)
    copy(x)
    local collections = 0
    local function sentinel()   -- counts the collections: a proxy that re-arms itself
      local p = newproxy(true)
      getmetatable(p).__gc = function() collections = collections + 1; sentinel() end
    end
    collectgarbage()
    sentinel()
    local base, peak = hl.core.heap_bytes(), 0
    for _ = 1, 240 do
      copy(x)
      peak = math.max(peak, hl.core.heap_bytes() - base)
    end
    -- every 24 blocks of 64 MiB is 10 collections, on a GPU of 96 GiB or more; 1/64 of a 16 GiB
    -- GPU is 4 blocks (60); the host rule collected on every call (240)
    assert.is_true(collections >= 5 and collections <= 80, "collections: " .. collections)
    assert.is_true(peak <= 26 * 2 ^ 26, "device garbage peaked at " .. peak .. " bytes")
  end)

  it("convolves a batch of 1437 images under jit (the CNN sample's shapes)", function()
    local imgs = hl.random.normal(hl.random.key(3), {1437, 4, 4, 4}):to("cpu")
    local w = hl.random.normal(hl.random.key(4), {8, 4, 3, 3}):to("cpu")
    local f = hl.jit(function(p, q) return hl.nn.conv2d(p, q, {padding = 1}) end)
    assert.is_true(max_abs_diff(f(imgs:to("cuda"), w:to("cuda")), f(imgs, w)) < 1e-4)
  end)

  it("refuses to mix devices in one op, naming device_put", function()
    local ok, err = pcall(function() return gx + x end)
    assert.is_false(ok)
    assert.truthy(err:find("^halua: add: operands are on different devices"))
    assert.truthy(err:find("device_put"))
  end)
end)
