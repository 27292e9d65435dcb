-- Printing: Lua expressions that rebuild the array, NumPy-style alignment and summaries.
local hl = require "halua"

local function rebuild(s) return assert(loadstring("local hl = ...; return " .. s))(hl) end

describe("printing", function()
  it("0-d, 1-d and 2-d arrays, aligned", function()
    assert.are.equal("hl.array(3.5)", tostring(hl.array(3.5)))
    assert.are.equal('hl.array({1, 2, 3}, "int32")', tostring(hl.array({1, 2, 3}, "int32")))
    assert.are.equal("hl.array({{ 1.00,  2.50, -3.00},\n          {10.00,  0.00,  4.25}})",
                     tostring(hl.array({{1, 2.5, -3}, {10, 0, 4.25}})))
  end)
  it("3-d arrays separate blocks with a blank line", function()
    assert.are.equal('hl.array({{{0, 1},\n           {2, 3}},\n\n          {{4, 5},\n           {6, 7}}}, "int32")',
                     tostring(hl.reshape(hl.arange(8), {2, 2, 2})))
  end)
  it("booleans, NaN and infinities as valid Lua", function()
    assert.are.equal('hl.array({ true, false}, "bool")', tostring(hl.array({true, false})))
    assert.are.equal("hl.array({ 0/0,  1/0, -1/0,  1.5})", tostring(hl.array({0 / 0, 1 / 0, -1 / 0, 1.5})))
  end)
  it("the fewest digits that rebuild each value: float32 by its own, float64 by its", function()
    assert.are.equal("hl.array({0.1, 0.2})", tostring(hl.array({0.1, 0.2})))
    assert.are.equal('hl.array({0.3333333333333333}, "float64")', tostring(hl.array({1 / 3}, "float64")))
    assert.are.equal('hl.array({0.33333334})', tostring(hl.array({1 / 3})))
  end)
  it("scientific notation when magnitudes are far apart", function()
    assert.are.equal("hl.array({1.0e-05, 1.0e+00, 1.0e+03})", tostring(hl.array({1e-5, 1, 1000})))
  end)
  it("zero-size arrays print as zeros", function()
    assert.are.equal("hl.zeros({2, 0})", tostring(hl.zeros({2, 0})))
    assert.are.equal('hl.zeros({0}, "int32")', tostring(hl.zeros({0}, "int32")))
  end)
  it("summarises past 1000 elements with ...", function()
    local s = tostring(hl.reshape(hl.arange(1500), {50, 30}))
    assert.truthy(s:find("...", 1, true))
    assert.truthy(s:find("{   0,    1,    2,  ...,   27,   28,   29},", 1, true))
    assert.truthy(s:find("{1470, 1471, 1472,  ..., 1497, 1498, 1499}}", 1, true))
    local lines = 0
    for _ in s:gmatch("\n") do lines = lines + 1 end
    assert.are.equal(6, lines)
  end)
  it("rebuilds exactly what it printed, for every dtype and rank 0 to 6", function()
    math.randomseed(5)
    for _, dtype in ipairs {"float32", "float64", "int32", "int64", "uint8", "bool"} do
      for rank = 0, 6 do
        local shape = {}
        for d = 1, rank do shape[d] = (d % 3) + 1 end
        local n = 1
        for _, e in ipairs(shape) do n = n * e end
        local x = hl.array(math.random() * 100 - 50, "float64")
        x = hl.broadcast_to(x, shape) + hl.reshape(hl.arange(n), shape) * 1.37
        if dtype == "bool" then x = hl.gt(x, 0) else x = x:astype(dtype) end
        local back = rebuild(tostring(x))
        assert.are.equal(x.dtype, back.dtype)
        assert.are.same(x.shape, back.shape)
        assert.are.same(x:totable(), back:totable())
      end
    end
  end)
  it("tracers print their type", function()
    local seen
    hl.jit(function(a) seen = tostring(a) return a end)(hl.ones({3, 4}, "int32"))
    assert.are.equal("<traced int32[3,4]>", seen)
  end)
end)
