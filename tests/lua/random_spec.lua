-- Random numbers: Threefry-2x32 known answers, JAX's key derivation, identical bits eager and
-- under jit, distributions (moments, Kolmogorov-Smirnov), and the bit primitives under them.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"
local R = hl.random

local err_of = require("support.errors").err_of
local has = require("support.errors").has
local function same(a, b)
  local x, y = a:totable(), b:totable()
  assert.are.same(x, y)
end

suite("bit primitives against NumPy", function(case)
  for _, dtype in ipairs {"int32", "int64", "uint8"} do
    local lo, hi = dtype == "uint8" and 0 or -1000000, dtype == "uint8" and 255 or 1000000
    local a, b = np.rand({4, 5}, lo, hi, dtype), np.rand({5}, lo, hi, dtype)
    for op, expr in pairs {bitwise_and = "np.bitwise_and(a, b)", bitwise_or = "np.bitwise_or(a, b)",
                           bitwise_xor = "np.bitwise_xor(a, b)"} do
      case(op .. " " .. dtype, function() return hl[op](a, b) end, expr, {a, b}, {dtype = dtype})
    end
    local width = dtype == "uint8" and 8 or dtype == "int32" and 32 or 64
    local s = np.rand({4, 5}, 0, width - 1, dtype)
    case("left_shift " .. dtype, function() return hl.left_shift(a, s) end, "np.left_shift(a, b)", {a, s}, {dtype = dtype})
    case("right_shift " .. dtype, function() return hl.right_shift(a, s) end, "np.right_shift(a, b)", {a, s}, {dtype = dtype})
  end
  local t, f = hl.array({true, true, false, false}), hl.array({true, false, true, false})
  case("bitwise_xor bool", function() return hl.bitwise_xor(t, f) end, "np.bitwise_xor(a, b)", {t, f}, {dtype = "bool"})
end)

describe("bit primitives", function()
  it("shift past the width: 0, or -1 for negative values shifted right", function()
    local x = hl.array({1, -8, 5, -1}, "int32")
    assert.are.same({0, 0, 0, 0}, hl.left_shift(x, 32):totable())
    assert.are.same({0, -1, 0, -1}, hl.right_shift(x, 40):totable())
    assert.are.same({0, -1, 0, -1}, hl.right_shift(x, -1):totable())
    assert.are.same({2, -16, 10, -2}, hl.left_shift(x, 1):totable())
  end)
  it("reject floats with the op's name", function()
    has(err_of(hl.bitwise_and, hl.ones(3), hl.ones(3)), "halua: bitwise_and: needs integer or bool operands, got float32")
    has(err_of(hl.left_shift, hl.ones(3), 1), "halua: left_shift: needs integer operands, got float32")
  end)
end)

describe("threefry-2x32", function()
  local function check(key, x0, x1, want0, want1)
    local a, b = R.threefry2x32(hl.array(key, "int64"), hl.array({x0}, "int64"), hl.array({x1}, "int64"))
    assert.are.equal(want0, a:totable()[1])
    assert.are.equal(want1, b:totable()[1])
  end
  it("matches the published known-answer vectors (Random123, 20 rounds)", function()
    check({0, 0}, 0, 0, 0x6b200159, 0x99ba4efe)
    check({0xffffffff, 0xffffffff}, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7)
    check({0x13198a2e, 0x03707344}, 0x243f6a88, 0x85a308d3, 0xc4923a9c, 0x483df7a0)
  end)
  it("derives keys as JAX does", function()
    assert.are.same({0, 0}, R.key(0):totable())
    assert.are.same({0, 42}, R.key(42):totable())
    assert.are.same({1, 5}, R.key(2 ^ 32 + 5):totable())
    assert.are.same({{4146024105, 967050713}, {2718843009, 1272950319}}, R.split(R.key(0)):totable())
  end)
  it("gives the same bits eagerly and under jit", function()
    local k = R.key(7)
    local f = hl.jit(function(key)
      return R.uniform(key, {3, 5}), R.normal(key, {7}, "float64"), R.split(key, 3), R.fold_in(key, 9),
             R.randint(key, {4}, -3, 3), R.permutation(key, 6)
    end)
    local u, n, s, fi, ri, p = f(k)
    same(u, R.uniform(k, {3, 5}))
    same(n, R.normal(k, {7}, "float64"))
    same(s, R.split(k, 3))
    same(fi, R.fold_in(k, 9))
    same(ri, R.randint(k, {4}, -3, 3))
    same(p, R.permutation(k, 6))
  end)
  it("split and fold_in give distinct keys, and the same key gives the same numbers", function()
    local ks = R.split(R.key(1), 4)
    local seen = {}
    for i = 1, 4 do
      local t = ks[i]:totable()
      local id = t[1] .. ":" .. t[2]
      assert.is_nil(seen[id])
      seen[id] = true
    end
    assert.are_not.same(R.fold_in(R.key(1), 1):totable(), R.fold_in(R.key(1), 2):totable())
    same(R.normal(ks[2], {10}), R.normal(ks[2], {10}))
  end)
end)

describe("distributions", function()
  local n = 100000
  local function stats(x)
    local t = x:astype("float64"):totable()
    table.sort(t)
    local mean = 0
    for _, v in ipairs(t) do mean = mean + v end
    mean = mean / #t
    local var = 0
    for _, v in ipairs(t) do var = var + (v - mean) ^ 2 end
    return t, mean, var / (#t - 1)
  end
  -- Kolmogorov-Smirnov: the largest gap between the sample's and the model's distribution
  -- functions; 1.63 / sqrt(n) is the 1% critical value
  local function ks(sorted, cdf)
    local d = 0
    for i, v in ipairs(sorted) do
      local c = cdf(v)
      d = math.max(d, math.abs(c - (i - 1) / #sorted), math.abs(i / #sorted - c))
    end
    return d
  end
  local function erf(x)   -- Abramowitz-Stegun 7.1.26 is too coarse for KS at 1e5; use a series
    local s, term, k = x, x, 0
    if math.abs(x) > 5 then return x > 0 and 1 or -1 end
    repeat
      k = k + 1
      term = term * -x * x / k
      s = s + term / (2 * k + 1)
    until math.abs(term) < 1e-17
    return 2 / math.sqrt(math.pi) * s
  end

  it("uniform: in [0, 1), mean 1/2, variance 1/12, KS", function()
    for _, dtype in ipairs {"float32", "float64"} do
      local u = R.uniform(R.key(3), {n}, dtype)
      assert.are.equal(dtype, u.dtype)
      local t, mean, var = stats(u)
      assert.is_true(t[1] >= 0 and t[#t] < 1)
      assert.is_true(math.abs(mean - 0.5) < 4 * math.sqrt(1 / 12 / n))
      assert.is_true(math.abs(var - 1 / 12) < 0.002)
      assert.is_true(ks(t, function(v) return v end) < 1.63 / math.sqrt(n))
    end
    local t = stats(R.uniform(R.key(3), {1000}, -2, 5))
    assert.is_true(t[1] >= -2 and t[#t] < 5 and t[#t] > 4)
  end)
  it("normal: mean 0, variance 1, KS against the normal distribution function", function()
    for _, dtype in ipairs {"float32", "float64"} do
      local t, mean, var = stats(R.normal(R.key(4), {n}, dtype))
      assert.is_true(math.abs(mean) < 4 / math.sqrt(n))
      assert.is_true(math.abs(var - 1) < 0.02)
      assert.is_true(ks(t, function(v) return 0.5 * (1 + erf(v / math.sqrt(2))) end) < 1.63 / math.sqrt(n))
    end
  end)
  it("bernoulli, randint, categorical, permutation", function()
    local _, mean = stats(R.bernoulli(R.key(5), 0.3, {n}):astype("float64"))
    assert.is_true(math.abs(mean - 0.3) < 4 * math.sqrt(0.21 / n))
    local r = R.randint(R.key(6), {n}, -2, 3)
    assert.are.equal("int32", r.dtype)
    local counts = {}
    for _, v in ipairs(r:totable()) do counts[v] = (counts[v] or 0) + 1 end
    for v = -2, 2 do assert.is_true(math.abs(counts[v] / n - 0.2) < 0.01, "value " .. v) end
    assert.is_nil(counts[3])
    local logits = hl.log(hl.array({0.1, 0.2, 0.7}))
    local c = R.categorical(R.key(8), hl.broadcast_to(logits, {20000, 3}))
    local cc = {0, 0, 0}
    for _, v in ipairs(c:totable()) do cc[v] = cc[v] + 1 end
    for i, p in ipairs {0.1, 0.2, 0.7} do assert.is_true(math.abs(cc[i] / 20000 - p) < 0.015) end
    local p = R.permutation(R.key(9), 50):totable()
    table.sort(p)
    for i = 1, 50 do assert.are.equal(i, p[i]) end
  end)
  it("errors name the function", function()
    has(err_of(R.uniform, hl.ones(2), {3}), "halua: random.uniform: expected a key (an int64[2] array from hl.random.key or split), got float32[2]")
    has(err_of(R.normal, R.key(1), {3}, "int32"), "halua: random.normal: dtype must be float32, float64, float16 or bfloat16, got int32")
    has(err_of(R.key, 1.5), "halua: random.key: the seed must be an integer")
    has(err_of(R.randint, R.key(1), {2}, 3, 3), "halua: random.randint: hi (3) must be greater than lo (3)")
    has(err_of(R.split, R.key(1), 0), "halua: random.split: n must be a positive integer, got 0")
    has(err_of(R.uniform, R.key(1), {-1}), "halua: random.uniform: shape entry 1 must be a non-negative integer, got -1")
  end)
end)
