-- hl.sort and hl.argsort against NumPy's stable sort (kind="stable"; argsort 1-based): NaN and
-- infinities, ties, every dtype, zero-size and strided arrays, negative axes, eager and jit, and
-- sort's derivatives against central differences.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"
local diff_check = require "support.diff_check"

math.randomseed(51)

local function dims(s) return "[" .. table.concat(s, ",") .. "]" end
-- x with NaN and +-inf scattered through it (float dtypes)
local function specials(x)
  local v = hl.reshape(x, {x.size}):totable()
  for i = 1, #v do
    local r = math.random()
    if r < 0.08 then v[i] = 0 / 0 elseif r < 0.12 then v[i] = 1 / 0 elseif r < 0.16 then v[i] = -1 / 0 end
  end
  return hl.reshape(hl.array(v, x.dtype), x.shape)
end

suite("sort and argsort against NumPy", function(case)
  local shapes = {{{7}, -1}, {{4, 9}, -1}, {{4, 9}, 1}, {{3, 4, 5}, 2}, {{3, 4, 5}, -3}, {{1}, 1}, {{0}, 1}, {{0, 4}, 2},
                  {{4, 0}, 2}, {{2, 1000}, -1}, {{300, 3}, 1}}
  for _, sp in ipairs(shapes) do
    local shape, axis = sp[1], sp[2]
    local ax0 = axis < 0 and #shape + axis or axis - 1
    for _, dtype in ipairs {"float32", "float64", "int32", "int64", "uint8", "bool"} do
      -- few distinct values, so ties are everywhere
      local x = dtype == "bool" and np.rand(shape, 0, 1, "bool") or np.rand(shape, -4, 4, dtype == "uint8" and "int32" or dtype)
      if dtype == "uint8" then x = (x + 4):astype("uint8") end
      if dtype:match("float") then x = specials(hl.floor(x * 2) / 2) end
      local name = string.format("%s %s axis %d", dtype, dims(shape), axis)
      case("sort " .. name, function() return hl.sort(x, axis) end, string.format("np.sort(a, axis=%d, kind='stable')", ax0), {x})
      case("argsort " .. name, function() return hl.argsort(x, axis) end,
           string.format("np.argsort(a, axis=%d, kind='stable') + 1", ax0), {x}, {dtype = "int64"})
    end
  end
  local x = specials(np.rand({6, 8}, -3, 3, "float64"))
  case("the default axis is the last", function() return hl.sort(x) end, "np.sort(a, kind='stable')", {x})
  case("x:sort(1) method", function() return x:sort(1) end, "np.sort(a, axis=0, kind='stable')", {x})
  case("x:argsort() method", function() return x:argsort() end, "np.argsort(a, kind='stable') + 1", {x}, {dtype = "int64"})
  case("a transposed view", function() return hl.sort(x.T, -1) end, "np.sort(a.T, kind='stable')", {x})
  case("a reversed strided slice", function() return hl.argsort(x[{{}, {8, 1, -2}}]) end,
       "np.argsort(a[:, ::-2], kind='stable') + 1", {x}, {dtype = "int64"})
  local z = hl.array({0, -0.0, 0, -0.0, 1, -1})
  case("-0.0 and 0.0 are ties: their order is kept", function() return hl.argsort(z) end, "np.argsort(a, kind='stable') + 1", {z}, {dtype = "int64"})
  local nan = hl.array({0 / 0, 1, 0 / 0, -1 / 0, 1 / 0, 0 / 0})
  case("NaN after +inf, in their original order", function() return hl.argsort(nan) end, "np.argsort(a, kind='stable') + 1", {nan}, {dtype = "int64"})
  -- under jit: an extern stage per sort
  local y = specials(np.rand({5, 33}, -2, 2, "float32"))
  case("jit: sort then arithmetic", function() return hl.jit(function(v) return hl.sort(v * 2, 1) + 1 end)(y) end,
       "np.sort(a * 2, axis=0, kind='stable') + 1", {y})
  case("jit: argsort", function() return hl.jit(function(v) return hl.argsort(v) end)(y) end,
       "np.argsort(a, kind='stable') + 1", {y}, {dtype = "int64"})
  case("jit: the three smallest of each row (a block of the sorted lanes)", function()
    return hl.jit(function(v) return hl.sort(v)[{{2, 4}, {1, 3}}] end)(y)
  end, "np.sort(a, kind='stable')[1:4, 0:3]", {y})
  case("jit: argsort of a transposed argument", function() return hl.jit(function(v) return hl.argsort(v.T, 1) end)(y) end,
       "np.argsort(a.T, axis=0, kind='stable') + 1", {y}, {dtype = "int64"})
  -- two pipelines that differ only in the axis must not share a cache entry
  local sq = np.rand({5, 5}, -2, 2, "float32")
  for _, ax in ipairs {1, 2, -1} do
    case("jit: a square matrix sorted along axis " .. ax, function() return hl.jit(function(v) return hl.sort(v, ax) end)(sq) end,
         string.format("np.sort(a, axis=%d, kind='stable')", ax < 0 and 1 or ax - 1), {sq})
    case("jit: a square matrix argsorted along axis " .. ax, function() return hl.jit(function(v) return hl.argsort(v, ax) end)(sq) end,
         string.format("np.argsort(a, axis=%d, kind='stable') + 1", ax < 0 and 1 or ax - 1), {sq}, {dtype = "int64"})
  end
  case("the traced program shows the axis", function()
    local text = tostring(hl.trace(function(v) return hl.sort(v, 1) end, sq))
    return hl.array(text:find("sort %%%d+ axis=1") ~= nil)
  end, "np.array(True)", {})
  local iy = np.rand({4, 6}, -3, 3, "int32")
  case("jit: int32 argsort, ties", function() return hl.jit(function(v) return hl.argsort(v, 1) end)(iy) end,
       "np.argsort(a, axis=0, kind='stable') + 1", {iy}, {dtype = "int64"})
  local b = np.rand({3, 7}, 0, 1, "bool")
  case("jit: bool sort", function() return hl.jit(function(v) return hl.sort(v) end)(b) end, "np.sort(a, kind='stable')", {b})
  case("jit: zero-size lanes", function() return hl.jit(function(v) return hl.sort(v, 1) end)(hl.zeros({0, 3})) end,
       "np.zeros((0, 3), np.float32)", {})
  case("jit: take_along_axis with argsort is sort", function()
    return hl.jit(function(v) return hl.take_along_axis(v, hl.argsort(v, 2), 2) end)(y)
  end, "np.sort(a, axis=1, kind='stable')", {y})
end)

describe("sort: int64 beyond 2^53 and errors", function()
  it("int64 keys compare exactly", function()
    local big = hl.full({3}, 2 ^ 60, "int64") + hl.array({2, 0, 1}, "int64")
    local s = hl.sort(big) - 2 ^ 60
    assert.are.same({0, 1, 2}, s:totable())
    assert.are.same({2, 3, 1}, hl.argsort(big):totable())
    assert.are.same({2, 3, 1}, hl.jit(hl.argsort)(big):totable())
  end)
  local function fails(pattern, f, ...)
    local ok, err = pcall(f, ...)
    assert.is_false(ok, "expected an error matching " .. pattern)
    assert.is_truthy(tostring(err):find(pattern), "error was: " .. tostring(err))
  end
  it("errors name the op", function()
    fails("^halua: sort: cannot sort a 0%-d array", hl.sort, hl.array(3))
    fails("^halua: argsort: cannot sort a 0%-d array", hl.argsort, hl.array(3))
    fails("^halua: sort: axis 3 is out of range for 2 dimensions", hl.sort, hl.ones({2, 2}), 3)
    fails("^halua: argsort: axis %-3 is out of range for 2 dimensions", hl.argsort, hl.ones({2, 2}), -3)
    fails("^halua: sort: axis must be an integer", hl.sort, hl.ones({2}), 1.5)
    fails("^halua: sort: argument 1 is a string, expected an array", hl.sort, "x")
    fails("^halua: argsort: argument 1 is nil, expected an array", hl.argsort)
  end)
  it("in a cuda pipeline, sorting is a host stage between GPU kernels", function()
    -- lowering for cuda needs no GPU: the loop nest calls the host sort, whose result is host-dirty
    local f = hl.jit(function(v) return hl.sort(v * 2) + 1 end, {device = "cuda"})
    local stmt = f:lower(hl.ones({3})):stmt()
    assert.truthy(stmt:find("hl_stage_sort", 1, true), stmt)
    assert.truthy(stmt:find("_halide_buffer_set_host_dirty", 1, true), stmt)
  end)
end)

describe("sort derivatives", function()
  local flat, numeric, close = diff_check.flat, diff_check.numeric, diff_check.close
  math.randomseed(52)
  local x = np.rand({3, 5}, -1, 1, "float64")
  local w = np.rand({3, 5}, -1, 1, "float64")
  local w2 = np.rand({3, 5}, -1, 1, "float64")
  local cases = {
    {"sort along the last axis", function(v) return (hl.sort(v) * w):sum() end},
    {"sort along the first axis", function(v) return (hl.sort(v, 1) * w):sum() end},
    {"sort of a product, squared", function(v) return (hl.sort(v * w2, -1) ^ 2 * w):sum() end},
    {"the median of each row (sort then index)", function(v) return hl.sort(v)[{{}, 3}]:sum() end},
  }
  for _, c in ipairs(cases) do
    it(c[1] .. ": grad against central differences, eager and jit", function()
      local want = numeric(c[2], x)
      close(hl.grad(c[2])(x), want, 1e-8, "eager")
      close(hl.jit(hl.grad(c[2]))(x), want, 1e-8, "jit")
    end)
  end
  it("jvp permutes the tangent as sort permutes the values", function()
    local t = np.rand({3, 5}, -1, 1, "float64")
    local _, tj = hl.jvp(function(v) return hl.sort(v) end, {x}, {t})
    local want = hl.take_along_axis(t, hl.argsort(x), 2)
    close(tj, flat(want), 0, "jvp")
  end)
  it("ties: each tied element keeps its own cotangent (a permutation, not a share)", function()
    local g = hl.grad(function(v) return (hl.sort(v) * hl.array({1, 2, 3, 4}, "float64")):sum() end)(hl.array({2, 1, 2, 1}, "float64"))
    assert.are.same({3, 1, 4, 2}, g:totable())
  end)
  it("argsort has no derivative: indices computed from x do not carry one", function()
    local g = hl.grad(function(v) return (v * hl.argsort(v):astype("float64")):sum() end)(hl.array({3, 1, 2}, "float64"))
    assert.are.same({2, 3, 1}, g:totable())   -- argsort({3, 1, 2}), held constant
  end)
end)

describe("host stages inside compiled loops", function()
  it("solve and sort in a jitted fori_loop body match the Lua loop", function()
    local a = hl.array({{4, 1, 0}, {2, 3, 1}, {0, 1, 5}}, "float64")
    local x = hl.array({1, -2, 3}, "float64")
    local f = hl.jit(function(m, v0)
      return hl.fori_loop(1, 4, function(_, v) return hl.sort(hl.linalg.solve(m, v)) * 3 end, v0)
    end)
    local v = x
    for _ = 1, 4 do v = hl.sort(hl.linalg.solve(a, v)) * 3 end
    local got, want = f(a, x):totable(), v:totable()
    for i = 1, 3 do assert.is_true(math.abs(got[i] - want[i]) <= 1e-14 * math.abs(want[i])) end
  end)
end)

describe("sort under vmap", function()
  it("sort and argsort map over a leading axis", function()
    local x = np.rand({3, 4, 5}, -2, 2, "float32")
    for _, ax in ipairs {1, 2, -1} do
      assert.are.same(hl.sort(x, ax + (ax > 0 and 1 or 0)):totable(), hl.vmap(function(v) return hl.sort(v, ax) end)(x):totable())
      assert.are.same(hl.argsort(x, ax + (ax > 0 and 1 or 0)):totable(), hl.vmap(function(v) return hl.argsort(v, ax) end)(x):totable())
    end
    assert.are.same(hl.sort(x, 3):totable(), hl.jit(hl.vmap(hl.sort))(x):totable())
  end)
end)
