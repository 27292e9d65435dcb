-- Creation (array, zeros, ones, full, *_like, arange, linspace, eye), properties (shape, ndim,
-- size, dtype, #), values back to Lua (totable, item), astype between every pair of dtypes, and
-- immutability. Expectations come from NumPy at test time.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"

math.randomseed(61)

local dtypes = {"float32", "float64", "int32", "int64", "uint8", "bool"}

suite("creation", function(case)
  case("array from nested tables", function() return hl.array({{1, 2, 3}, {4, 5, 6}}) end, "np.array([[1, 2, 3], [4, 5, 6]], np.float32)", {}, {dtype = "float32"})
  case("array with a dtype", function() return hl.array({1.7, -2.2}, "int32") end, "np.array([1.7, -2.2]).astype(np.int32)", {}, {dtype = "int32"})
  case("array of booleans", function() return hl.array({true, false}) end, "np.array([True, False])", {}, {dtype = "bool"})
  case("array from a number", function() return hl.array(3.25) end, "np.float32(3.25)", {}, {dtype = "float32"})
  case("array from an array casts", function() return hl.array(hl.array({1.5, 2.5}), "float64") end, "np.array([1.5, 2.5])", {}, {dtype = "float64"})
  case("zeros", function() return hl.zeros({2, 3}) end, "np.zeros((2, 3), np.float32)", {}, {dtype = "float32"})
  case("ones int64", function() return hl.ones(4, "int64") end, "np.ones(4, np.int64)", {}, {dtype = "int64"})
  case("full", function() return hl.full({2, 2}, 7.5) end, "np.full((2, 2), 7.5, np.float32)", {}, {dtype = "float32"})
  case("full bool", function() return hl.full({3}, true) end, "np.full(3, True)", {}, {dtype = "bool"})
  local x = np.rand({2, 3}, 0, 5, "int32")
  case("zeros_like", function() return hl.zeros_like(x) end, "np.zeros_like(a)", {x}, {dtype = "int32"})
  case("ones_like", function() return hl.ones_like(x) end, "np.ones_like(a)", {x}, {dtype = "int32"})
  case("full_like", function() return hl.full_like(x, 9) end, "np.full_like(a, 9)", {x}, {dtype = "int32"})
  case("arange(stop)", function() return hl.arange(5) end, "np.arange(5)", {}, {dtype = "int32"})
  case("arange(start, stop, step)", function() return hl.arange(2, 11, 3) end, "np.arange(2, 11, 3)", {}, {dtype = "int32"})
  case("arange with a negative step", function() return hl.arange(5, 0, -2) end, "np.arange(5, 0, -2)", {}, {dtype = "int32"})
  case("arange of fractions is float32", function() return hl.arange(0, 1, 0.25) end, "np.arange(0, 1, 0.25)", {}, {dtype = "float32"})
  case("arange with a dtype", function() return hl.arange(4, "float64") end, "np.arange(4.0)", {}, {dtype = "float64"})
  case("arange that is empty", function() return hl.arange(3, 1) end, "np.arange(3, 1)", {}, {dtype = "int32"})
  case("linspace", function() return hl.linspace(0, 1, 5) end, "np.linspace(0, 1, 5)", {}, {dtype = "float32"})
  case("linspace hits the end exactly", function() return hl.linspace(-1, 7.3, 11) end, "np.linspace(-1, 7.3, 11)", {}, {dtype = "float32"})
  case("eye", function() return hl.eye(3) end, "np.eye(3)", {}, {dtype = "float32"})
  case("eye n x m", function() return hl.eye(2, 4, "int32") end, "np.eye(2, 4, dtype=np.int32)", {}, {dtype = "int32"})
  case("astype float -> int truncates", function() return hl.array({1.9, -1.9, 0.5}):astype("int32") end, "np.array([1.9, -1.9, 0.5], np.float32).astype(np.int32)", {}, {dtype = "int32"})
  case("astype to bool", function() return hl.array({0, 2, -0.0}):astype("bool") end, "np.array([0, 2, -0.0]).astype(bool)", {}, {dtype = "bool"})
  case("astype uint8 -> float64", function() return hl.array({255, 3}, "uint8"):astype("float64") end, "np.array([255.0, 3.0])", {}, {dtype = "float64"})
end)

describe("properties and values", function()
  local x = hl.array({{1, 2, 3}, {4, 5, 6}}, "int64")
  it("shape, ndim, size, dtype, device, #", function()
    assert.are.same({2, 3}, x.shape)
    assert.are.equal(2, x.ndim)
    assert.are.equal(6, x.size)
    assert.are.equal("int64", x.dtype)
    -- hl.array puts arrays on the default device: the host unless HALUA_DEVICE says otherwise
    if (os.getenv("HALUA_DEVICE") or "") == "" then assert.are.equal("cpu", hl.default_device()) end
    assert.are.equal(hl.default_device(), x.device)
    assert.are.equal(2, #x)
    assert.are.equal(hl.float32, "float32")
  end)
  it("shape is a new table each time", function()
    local s = x.shape
    s[1] = 99
    assert.are.same({2, 3}, x.shape)
  end)
  it("totable and item", function()
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, x:totable())
    assert.are.equal(5, x[2][2]:item())
    assert.are.same({true, false}, hl.array({true, false}):totable())
    assert.are.equal(2.5, hl.array(2.5):totable())
  end)
  it("ops never change their inputs", function()
    local a = hl.array({1, 2, 3})
    local b = a + 1
    local c = a:reshape({3, 1})
    local d = a:at(2):set(10)
    assert.are.same({1, 2, 3}, a:totable())
    assert.are.same({2, 3, 4}, b:totable())
    assert.are.same({1, 10, 3}, d:totable())
    assert.are.same({{1}, {2}, {3}}, c:totable())
  end)
  it("x:at(i) updates functionally: set, add, mul, min, max", function()
    local a = hl.array({{1, 2}, {3, 4}})
    assert.are.same({{1, 2}, {7, 7}}, a:at(2):set(7):totable())
    assert.are.same({{11, 2}, {13, 4}}, a:at({{}, 1}):add(10):totable())
    assert.are.same({{1, 2}, {3, 12}}, a:at({2, 2}):mul(3):totable())
    assert.are.same({{0, 0}, {3, 4}}, a:at(1):min(0):totable())
    assert.are.same({{5, 5}, {3, 4}}, a:at(1):max(5):totable())
  end)
end)

suite("more creation", function(case)
  case("array from a 3-D nested table", function() return hl.array({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}, {{9, 10}, {11, 12}}}) end,
       "np.arange(1, 13, dtype=np.float32).reshape(3, 2, 2)", {})
  case("array from a boolean is 0-d bool", function() return hl.array(true) end, "np.array(True)", {})
  case("array from a number with a dtype", function() return hl.array(3, "int32") end, "np.array(3, np.int32)", {})
  case("array from {} is empty float32", function() return hl.array({}) end, "np.zeros(0, np.float32)", {})
  case("array from {{}, {}} has shape [2,0]", function() return hl.array({{}, {}}) end, "np.zeros((2, 0), np.float32)", {})
  case("array int64 keeps values past 2^31", function() return hl.array({2 ^ 40 + 3, -(2 ^ 35), 2 ^ 53}, "int64") end,
       "np.array([2**40 + 3, -(2**35), 2**53], np.int64)", {})
  case("array float64 keeps full precision", function() return hl.array({0.1, 1 / 3, 1e-300, 1e300}, "float64") end,
       "np.array([0.1, 1 / 3, 1e-300, 1e300])", {})
  case("array float32 rounds to nearest", function() return hl.array({0.1, 1 / 3, 16777217}) end,
       "np.array([0.1, 1 / 3, 16777217], np.float32)", {})
  case("array of numbers as bool", function() return hl.array({0, 1, 2, -0.5}, "bool") end, "np.array([0, 1, 2, -0.5]).astype(bool)", {})
  case("array of uint8", function() return hl.array({0, 7, 255}, "uint8") end, "np.array([0, 7, 255], np.uint8)", {})
  case("array keeps NaN and infinities", function() return hl.array({0 / 0, 1 / 0, -1 / 0, -0.0}) end,
       "np.array([np.nan, np.inf, -np.inf, -0.0], np.float32)", {})
  for _, dt in ipairs(dtypes) do
    case("zeros " .. dt, function() return hl.zeros({2, 3}, dt) end, "np.zeros((2, 3), np." .. (dt == "bool" and "bool_" or dt) .. ")", {})
    case("ones " .. dt, function() return hl.ones(3, dt) end, "np.ones(3, np." .. (dt == "bool" and "bool_" or dt) .. ")", {})
  end
  case("zeros with shape {} is 0-d", function() return hl.zeros({}) end, "np.zeros((), np.float32)", {})
  case("zeros with a zero extent", function() return hl.zeros({3, 0, 2}) end, "np.zeros((3, 0, 2), np.float32)", {})
  case("full float64", function() return hl.full({2, 2}, 1 / 3, "float64") end, "np.full((2, 2), 1 / 3)", {})
  case("full int32 truncates", function() return hl.full({2}, 2.7, "int32") end, "np.full(2, 2.7).astype(np.int32)", {})
  case("full with NaN", function() return hl.full(3, 0 / 0) end, "np.full(3, np.nan, np.float32)", {})
  local f64 = np.rand({2, 2}, -1, 1, "float64")
  local b = np.rand({3}, 0, 1, "bool")
  case("zeros_like keeps float64", function() return hl.zeros_like(f64) end, "np.zeros_like(a)", {f64})
  case("ones_like keeps bool", function() return hl.ones_like(b) end, "np.ones_like(a)", {b})
  case("full_like of int32 with 2.5 stays int32", function() return hl.full_like(hl.array({1, 2}, "int32"), 2.5) end,
       "np.full_like(np.array([1, 2], np.int32), 2.5)", {})
  case("full_like of a 0-d array", function() return hl.full_like(hl.array(1.5), 4) end, "np.full_like(np.float32(1.5), 4)", {})
  case("arange(0) is empty", function() return hl.arange(0) end, "np.arange(0, dtype=np.int32)", {})
  case("arange(-3) is empty", function() return hl.arange(-3) end, "np.arange(-3, dtype=np.int32)", {})
  case("arange(0.5, 3)", function() return hl.arange(0.5, 3) end, "np.arange(0.5, 3, dtype=np.float32)", {})
  case("arange(1, 2, 0.1) has NumPy's length", function() return hl.arange(1, 2, 0.1) end, "np.arange(1, 2, 0.1).astype(np.float32)", {})
  case("arange with a negative fractional step", function() return hl.arange(1, -1, -0.5) end, "np.arange(1, -1, -0.5, dtype=np.float32)", {})
  case("arange int64", function() return hl.arange(3, "int64") end, "np.arange(3, dtype=np.int64)", {})
  case("arange(start, stop) with negatives", function() return hl.arange(-4, 3) end, "np.arange(-4, 3, dtype=np.int32)", {})
  case("linspace with n = 1", function() return hl.linspace(2, 5, 1) end, "np.linspace(2, 5, 1, dtype=np.float32)", {})
  case("linspace with n = 0", function() return hl.linspace(2, 5, 0) end, "np.linspace(2, 5, 0, dtype=np.float32)", {})
  case("linspace descending", function() return hl.linspace(3, -3, 7) end, "np.linspace(3, -3, 7, dtype=np.float32)", {})
  case("linspace float64", function() return hl.linspace(0, 1, 7, "float64") end, "np.linspace(0, 1, 7)", {})
  case("eye(1)", function() return hl.eye(1) end, "np.eye(1, dtype=np.float32)", {})
  case("eye(0)", function() return hl.eye(0) end, "np.eye(0, dtype=np.float32)", {})
  case("eye(3, 2)", function() return hl.eye(3, 2) end, "np.eye(3, 2, dtype=np.float32)", {})
  case("eye float64", function() return hl.eye(3, 3, "float64") end, "np.eye(3)", {})
end)

-- astype between every pair of the six dtypes, on values every dtype can hold; then the edge
-- cases: truncation toward zero, wrap-around of out-of-range integers, NaN and -0.0 to bool
suite("astype", function(case)
  local src = {
    float32 = hl.array({0, 1.5, 2.75, 100, 99.9, 3, -0.0, 0.25}),
    float64 = hl.array({0, 1.5, 2.75, 100, 99.9, 3, -0.0, 0.25}, "float64"),
    int32 = hl.array({0, 1, 3, 100, 42, 7, 255, 2}, "int32"),
    int64 = hl.array({0, 1, 3, 100, 42, 7, 255, 2}, "int64"),
    uint8 = hl.array({0, 1, 3, 100, 42, 7, 255, 2}, "uint8"),
    bool = hl.array({false, true, true, false, true, false, false, true}),
  }
  for _, from in ipairs(dtypes) do
    for _, to in ipairs(dtypes) do
      local x = hl.reshape(src[from], {2, 4})
      case(from .. " -> " .. to, function() return x:astype(to) end, "a.astype(np." .. (to == "bool" and "bool_" or to) .. ")", {x})
    end
  end
  local neg = hl.array({-1.9, -0.5, 1.9, 2.5, -2.5, 1e6})
  case("float32 -> int32 truncates toward zero", function() return neg:astype("int32") end, "a.astype(np.int32)", {neg})
  case("float64 -> int64 truncates toward zero", function() return neg:astype("float64"):astype("int64") end,
       "a.astype(np.float64).astype(np.int64)", {neg})
  local wide = hl.array({-1, 256, 300, -129, 65535}, "int32")
  case("int32 -> uint8 wraps around", function() return wide:astype("uint8") end, "a.astype(np.uint8)", {wide})
  local huge = hl.array({2 ^ 32 + 5, -1, 2 ^ 31, -(2 ^ 31) - 1}, "int64")
  case("int64 -> int32 wraps around", function() return huge:astype("int32") end, "a.astype(np.int32)", {huge})
  -- (a float32 denormal only where float32 keeps it: CUDA flushes it to zero, np.float32_specials)
  local sp = hl.array(np.float32_specials({0 / 0, -0.0, 1 / 0, -1 / 0, 1e-40}))
  case("NaN, -0.0, inf and denormals -> bool", function() return sp:astype("bool") end, "a.astype(bool)", {sp})
  local sp64 = hl.array({0 / 0, -0.0, 1 / 0, -1 / 0, 1e-310, -1e-310, 0}, "float64")
  case("float64 NaN, -0.0, inf and denormals -> bool", function() return sp64:astype("bool") end, "a.astype(bool)", {sp64})
  local d = hl.array({0.1, 1 / 3, 1e-50, 1e50, -1e-50}, "float64")
  case("float64 -> float32 rounds, underflows and overflows like NumPy", function() return d:astype("float32") end, "a.astype(np.float32)", {d})
  case("astype to the same dtype", function() return src.int32:astype("int32") end, "a", {src.int32})
  case("hl.astype is the function form", function() return hl.astype(src.float32, "float64") end, "a.astype(np.float64)", {src.float32})
end)

describe("more properties and values", function()
  it("0-d arrays: shape {}, ndim 0, size 1, item and totable give the number", function()
    local s = hl.array(2.5)
    assert.are.same({}, s.shape)
    assert.are.equal(0, s.ndim)
    assert.are.equal(1, s.size)
    assert.are.equal(2.5, s:item())
    assert.are.equal(2.5, s:totable())
  end)
  it("zero-size arrays: size 0 and empty tables", function()
    local z = hl.zeros({2, 0})
    assert.are.same({2, 0}, z.shape)
    assert.are.equal(0, z.size)
    assert.are.equal(2, #z)
    assert.are.same({{}, {}}, z:totable())
    assert.are.same({}, hl.zeros({0}):totable())
  end)
  it("3-D arrays: properties and nested totable", function()
    local x = hl.reshape(hl.arange(24, "int32"), {2, 3, 4})
    assert.are.same({2, 3, 4}, x.shape)
    assert.are.equal(3, x.ndim)
    assert.are.equal(24, x.size)
    assert.are.equal(2, #x)
    assert.are.equal("int32", x.dtype)
    local t = x:totable()
    assert.are.equal(2, #t)
    assert.are.equal(3, #t[1])
    assert.are.same({20, 21, 22, 23}, t[2][3])
  end)
  it("item on one-element arrays of any rank and dtype", function()
    assert.are.equal(7, hl.array({{7}}, "int64"):item())
    assert.are.equal(true, hl.array({true}):item())
    assert.are.equal(200, hl.array({200}, "uint8"):item())
    assert.are.equal(0.1, hl.array(0.1, "float64"):item())
    assert.is_true(hl.array(0 / 0):item() ~= hl.array(0 / 0):item())
    assert.are.equal(-1 / 0, hl.array({{{-1 / 0}}}):item())
  end)
  it("totable gives Lua numbers and booleans of the right values", function()
    assert.are.same({{1, 2}, {3, 4}}, hl.array({{1, 2}, {3, 4}}, "uint8"):totable())
    assert.are.same({{true}, {false}}, hl.array({{true}, {false}}):totable())
    assert.are.same({2 ^ 40}, hl.array({2 ^ 40}, "int64"):totable())
    assert.are.equal("number", type(hl.array({1}, "int32"):totable()[1]))
  end)
  it("hl.<dtype> names are the dtype strings", function()
    for _, dt in ipairs(dtypes) do assert.are.equal(dt, hl[dt]) end
  end)
  it("no op changes its inputs", function()
    local a = hl.array({{1, -2, 3}, {4, 5, -6}})
    local i = hl.array({{1, 2, 3}, {4, 5, 6}}, "int32")
    local ta, ti = a:totable(), i:totable()
    local results = {
      a + i, a * 2, -a, hl.exp(a), hl.abs(a), a:astype("int32"), a:astype("float32"), hl.sum(a, 1), hl.max(a),
      hl.argmax(a, 2), hl.matmul(a, a.T), hl.transpose(a), a.T, hl.reshape(a, {3, 2}), hl.broadcast_to(a, {2, 2, 3}),
      a[1], a[{{}, {1, 3, 2}}], hl.concatenate({a, i}, 1), hl.where(hl.gt(a, 0), a, i), hl.clip(a, -1, 1),
      a:at(1):set(0), a:at({2, 2}):add(5), hl.nn.softmax(a, 2), hl.mean(i), hl.expand_dims(a, 1), hl.squeeze(a[{{1, 1}}]),
      hl.jit(function(p, q) return p * q + 1, p:sum() end)(a, i), i % 2, i ^ 2, i / 2,
    }
    assert.are.equal(30, #results)
    assert.are.same(ta, a:totable())
    assert.are.same(ti, i:totable())
    assert.are.equal("float32", a.dtype)
    assert.are.same({2, 3}, a.shape)
  end)
  it("a view's source is unchanged by ops on the view, and vice versa", function()
    local a = hl.arange(12):reshape({3, 4})
    local v = a.T
    local w = v * 10
    assert.are.same({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}, a:totable())
    assert.are.same({0, 40, 80}, w[1]:totable())
    local u = a:at({1, 1}):set(99)
    assert.are.equal(0, v[1][1]:item())
    assert.are.equal(99, u[1][1]:item())
  end)
end)
