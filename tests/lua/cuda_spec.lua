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

  it("refuses to mix devices in one op, naming device_put", function()
    local ok, err = pcall(function() return gx + x end)
    assert.is_false(ok)
    assert.truthy(err:find("^halua: add: operands are on different devices"))
    assert.truthy(err:find("device_put"))
  end)
end)
