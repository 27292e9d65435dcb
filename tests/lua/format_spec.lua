-- Printing (lua/halua/format.lua): Lua expressions that rebuild the array, NumPy-style
-- alignment, summaries past 1000 elements. The module is pure Lua and tested here on its own,
-- with elements served from Lua tables; the last block checks the wiring through the engine
-- when it can be loaded.
--   LUA_PATH="lua/?.lua;lua/?/init.lua;;" busted tests/lua/format_spec.lua
local format = require "halua.format"

local load_string = loadstring or load
local huge = math.huge

-- format a flat, row-major Lua table of elements
local function fmt(values, shape, dtype)
  return format.array(function(i) return values[i + 1] end, shape, dtype)
end

local function range(n, scale)
  local t = {}
  for i = 1, n do t[i] = (i - 1) * (scale or 1) end
  return t
end

-- Evaluate printed text with a stub hl that records what it is asked to build, rounding
-- elements to their dtype as the engine would. Returns {kind, dtype, shape, values (flat)}.
local function rebuild(s)
  local rec = {}
  local function shape_and_flat(t, dtype)
    local shape, flat, node = {}, {}, t
    while type(node) == "table" do
      shape[#shape + 1] = #node
      node = node[1]
    end
    local round = dtype:match("float") and format._rounder(dtype) or function(v) return v end
    local function walk(x, d)
      if d > #shape then
        flat[#flat + 1] = type(x) == "number" and round(x) or x
        return
      end
      assert(type(x) == "table" and #x == shape[d], "ragged nesting at depth " .. d)
      for i = 1, #x do walk(x[i], d + 1) end
    end
    walk(t, 1)
    return shape, flat
  end
  local hl = {
    array = function(t, dtype)
      rec.kind, rec.dtype = "array", dtype or "float32"
      rec.shape, rec.values = shape_and_flat(t, rec.dtype)
      return rec
    end,
    zeros = function(shape, dtype)
      rec.kind, rec.dtype, rec.shape, rec.values = "zeros", dtype or "float32", shape, {}
      return rec
    end,
  }
  local chunk = assert(load_string("local hl = ...; return " .. s))
  return chunk(hl)
end

local function same_value(a, b)
  if a ~= a then return b ~= b end
  return a == b and (a ~= 0 or 1 / a == 1 / b)   -- -0.0 stays -0.0
end

local function assert_rebuilds(values, shape, dtype)
  local s = fmt(values, shape, dtype)
  local r = rebuild(s)
  assert.are.equal(dtype, r.dtype)
  assert.are.same(shape, r.shape)
  assert.are.equal(#values, #r.values)
  for i = 1, #values do
    if not same_value(values[i], r.values[i]) then
      error(string.format("element %d: %s printed as %s in\n%s", i - 1, tostring(values[i]),
                          tostring(r.values[i]), s))
    end
  end
end

describe("format.array", function()
  after_each(function() format.precision = nil end)

  it("0-d arrays print the bare value", function()
    assert.are.equal("hl.array(3.5)", fmt({3.5}, {}, "float32"))
    assert.are.equal("hl.array(1.0)", fmt({1}, {}, "float32"))
    assert.are.equal('hl.array(-2, "int32")', fmt({-2}, {}, "int32"))
    assert.are.equal('hl.array(true, "bool")', fmt({true}, {}, "bool"))
    assert.are.equal("hl.array(0/0)", fmt({0 / 0}, {}, "float32"))
    assert.are.equal('hl.array(-1/0, "float64")', fmt({-huge}, {}, "float64"))
    assert.are.equal('hl.array(1.0e+16, "float64")', fmt({1e16}, {}, "float64"))
  end)

  it("1-d arrays: one format and one width for all elements", function()
    assert.are.equal("hl.array({1.0, 2.5})", fmt({1, 2.5}, {2}, "float32"))
    assert.are.equal('hl.array({1, 2, 3}, "int32")', fmt({1, 2, 3}, {3}, "int32"))
    assert.are.equal("hl.array({  1.00, 100.50,   0.25})", fmt({1, 100.5, 0.25}, {3}, "float32"))
    assert.are.equal("hl.array({0.0, 0.0, 0.0})", fmt({0, 0, 0}, {3}, "float32"))
    assert.are.equal('hl.array({7}, "uint8")', fmt({7}, {1}, "uint8"))
  end)

  it("2-d arrays: columns right-aligned across the whole array, rows under the brace", function()
    assert.are.equal("hl.array({{ 1.00,  2.50, -3.00},\n" ..
                     "          {10.00,  0.00,  4.25}})",
                     fmt({1, 2.5, -3, 10, 0, 4.25}, {2, 3}, "float32"))
    assert.are.equal('hl.array({{  0,   1},\n' ..
                     '          {  2, 300}}, "int32")', fmt({0, 1, 2, 300}, {2, 2}, "int32"))
    assert.are.equal("hl.array({{5.0}})", fmt({5}, {1, 1}, "float32"))
  end)

  it("3-d arrays separate blocks with a blank line", function()
    assert.are.equal('hl.array({{{0, 1},\n' ..
                     '           {2, 3}},\n' ..
                     '\n' ..
                     '          {{4, 5},\n' ..
                     '           {6, 7}}}, "int32")', fmt(range(8), {2, 2, 2}, "int32"))
  end)

  it("deeper arrays separate outer blocks with more blank lines, as NumPy does", function()
    assert.are.equal('hl.array({{{{{{0, 1}}}}},\n' ..
                     '\n\n\n\n' ..
                     '          {{{{{2, 3}}}}}}, "int32")', fmt(range(4), {2, 1, 1, 1, 1, 2}, "int32"))
    assert.are.equal("hl.array({{{{{{0.0},\n" ..
                     "              {1.0}}}},\n" ..
                     "\n\n\n" ..
                     "           {{{{2.0},\n" ..
                     "              {3.0}}}}}})", fmt(range(4), {1, 2, 1, 1, 2, 1}, "float32"))
  end)

  it("floats get the fewest digits that give every value back, at the dtype's precision", function()
    assert.are.equal("hl.array({0.1, 0.2})", fmt({0.1, 0.2}, {2}, "float32"))
    assert.are.equal('hl.array({0.1, 0.2}, "float64")', fmt({0.1, 0.2}, {2}, "float64"))
    assert.are.equal("hl.array(0.33333334)", fmt({1 / 3}, {}, "float32"))
    assert.are.equal('hl.array(0.3333333333333333, "float64")', fmt({1 / 3}, {}, "float64"))
    assert.are.equal('hl.array(0.1, "float16")', fmt({0.1}, {}, "float16"))
    assert.are.equal('hl.array(0.1, "bfloat16")', fmt({0.1}, {}, "bfloat16"))
    -- the shortest digit count of the neediest value sets everyone's
    assert.are.equal("hl.array({0.10000000, 0.33333334})", fmt({0.1, 1 / 3}, {2}, "float32"))
  end)

  it("mixed magnitudes within a factor 1e3 stay positional", function()
    assert.are.equal("hl.array({0.001, 1.000, 0.500})", fmt({0.001, 1, 0.5}, {3}, "float32"))
    assert.are.equal('hl.array({1000000000000000.0, 1234567890123456.0}, "float64")',
                     fmt({1e15, 1234567890123456}, {2}, "float64"))
  end)

  it("switches to scientific notation as NumPy does, with one exponent width", function()
    -- below 1e-4
    assert.are.equal("hl.array({1.0e-05, 1.0e+00, 1.0e+03})", fmt({1e-5, 1, 1000}, {3}, "float32"))
    assert.are.equal("hl.array(5.0e-05)", fmt({5e-5}, {}, "float32"))
    -- max/min over 1e3 (exactly 1e3 is not)
    assert.are.equal("hl.array({5.0e-01, 1.0e+03})", fmt({0.5, 1000}, {2}, "float32"))
    assert.are.equal("hl.array({   1.0, 1000.0})", fmt({1, 1000}, {2}, "float32"))
    -- 1e16 and above
    assert.are.equal('hl.array({1.0e+16, 2.0e+16}, "float64")', fmt({1e16, 2e16}, {2}, "float64"))
    assert.are.equal('hl.array({9999999999999998.0}, "float64")', fmt({9999999999999998}, {1}, "float64"))
    -- mantissas share a digit count; zeros do not count for the ratio
    assert.are.equal('hl.array({ 1.50e-05, -2.00e-05,  1.25e+00,  0.00e+00}, "float64")',
                     fmt({1.5e-5, -2e-5, 1.25, 0}, {4}, "float64"))
    -- three-digit exponents widen every exponent
    assert.are.equal('hl.array({ 1.0e-005,  1.0e+100, -2.5e-300}, "float64")',
                     fmt({1e-5, 1e100, -2.5e-300}, {3}, "float64"))
  end)

  it("negative numbers take their sign into the shared width", function()
    assert.are.equal("hl.array({-1.0, -0.5,  2.0})", fmt({-1, -0.5, 2}, {3}, "float32"))
    assert.are.equal('hl.array({-100,    5,   -3}, "int32")', fmt({-100, 5, -3}, {3}, "int32"))
    assert.are.equal('hl.array({-128,  127}, "int8")', fmt({-128, 127}, {2}, "int8"))
  end)

  it("NaN and infinities print as valid Lua: 0/0, 1/0, -1/0", function()
    assert.are.equal("hl.array({ 0/0,  1/0, -1/0,  1.5})", fmt({0 / 0, huge, -huge, 1.5}, {4}, "float32"))
    assert.are.equal("hl.array({0/0, 1/0})", fmt({0 / 0, huge}, {2}, "float32"))
    -- they do not take part in choosing the notation
    assert.are.equal("hl.array({    0/0, 1.0e-05, 1.0e+00})", fmt({0 / 0, 1e-5, 1}, {3}, "float32"))
    assert.are.equal("hl.array({1/0, 2.0})", fmt({huge, 2}, {2}, "float32"))
    local r = rebuild(fmt({0 / 0, huge, -huge}, {3}, "float32"))
    assert.is_true(r.values[1] ~= r.values[1])
    assert.are.equal(huge, r.values[2])
    assert.are.equal(-huge, r.values[3])
  end)

  it("booleans", function()
    assert.are.equal('hl.array({{ true, false},\n' ..
                     '          { true,  true}}, "bool")', fmt({true, false, true, true}, {2, 2}, "bool"))
    assert.are.equal('hl.array({true, true}, "bool")', fmt({true, true}, {2}, "bool"))
  end)

  it("integers print plainly, int64 past 2^53 too", function()
    assert.are.equal('hl.array({ 0, 10, 20}, "int32")', fmt({0, 10, 20}, {3}, "int32"))
    assert.are.equal('hl.array({    9007199254740992, -4611686018427387904,                    7}, "int64")',
                     fmt({2 ^ 53, -2 ^ 62, 7}, {3}, "int64"))
    -- int64's extremes as doubles: -2^63 exactly, 2^63 - 1 rounded to 2^63 (printed in range)
    assert.are.equal('hl.array({-9223372036854775808,  9223372036854775807}, "int64")',
                     fmt({-2 ^ 63, 2 ^ 63}, {2}, "int64"))
    assert.are.equal(2 ^ 63, rebuild(fmt({2 ^ 63}, {1}, "int64")).values[1])
    if jit then   -- LuaJIT's boxed 64-bit integers print exactly
      local big = load_string("return 9223372036854775807LL, -9223372036854775807LL - 1")
      assert.are.equal('hl.array({ 9223372036854775807, -9223372036854775808}, "int64")',
                       fmt({big()}, {2}, "int64"))
    end
    assert.are.equal('hl.array({255,   0}, "uint8")', fmt({255, 0}, {2}, "uint8"))
  end)

  it("zero-size arrays print as zeros of their shape, and fetch nothing", function()
    local calls = 0
    local function get() calls = calls + 1 end
    assert.are.equal("hl.zeros({2, 0})", format.array(get, {2, 0}, "float32"))
    assert.are.equal('hl.zeros({0}, "int32")', format.array(get, {0}, "int32"))
    assert.are.equal('hl.zeros({3, 0, 2}, "bool")', format.array(get, {3, 0, 2}, "bool"))
    assert.are.equal(0, calls)
    local r = rebuild(format.array(get, {2, 0}, "float32"))
    assert.are.equal("zeros", r.kind)
    assert.are.same({2, 0}, r.shape)
    assert.are.equal("float32", r.dtype)
  end)

  it("long rows wrap at 75 columns, continuing at the row's content column", function()
    assert.are.equal('hl.array({ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15,\n' ..
                     '          16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,\n' ..
                     '          32, 33, 34, 35, 36, 37, 38, 39}, "int32")', fmt(range(40), {40}, "int32"))
    assert.are.equal("hl.array({{ 0.0,  1.0,  2.0,  3.0,  4.0,  5.0,  6.0,  7.0,  8.0,  9.0,\n" ..
                     "           10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0},\n" ..
                     "          {20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0,\n" ..
                     "           30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0}})",
                     fmt(range(40), {2, 20}, "float32"))
    -- no line of a wrapped print passes 75 columns (closing braces and dtype aside)
    local s = fmt(range(1000, 1.25), {1000}, "float64")
    for line in (s .. "\n"):gmatch("(.-)\n") do
      assert.is_true(#line:gsub('}*, "float64"%)$', "") <= 75, line)
    end
  end)

  it("summarises a 2-d array past 1000 elements, fetching only what it shows", function()
    local fetched = {}
    local s = format.array(function(i) fetched[#fetched + 1] = i; return i end, {50, 30}, "int32")
    assert.are.equal('hl.array({{   0,    1,    2, ...,   27,   28,   29},\n' ..
                     '          {  30,   31,   32, ...,   57,   58,   59},\n' ..
                     '          {  60,   61,   62, ...,   87,   88,   89},\n' ..
                     '          ...,\n' ..
                     '          {1410, 1411, 1412, ..., 1437, 1438, 1439},\n' ..
                     '          {1440, 1441, 1442, ..., 1467, 1468, 1469},\n' ..
                     '          {1470, 1471, 1472, ..., 1497, 1498, 1499}}, "int32")', s)
    assert.are.same({0, 1, 2, 27, 28, 29, 30, 31, 32, 57, 58, 59, 60, 61, 62, 87, 88, 89,
                     1410, 1411, 1412, 1437, 1438, 1439, 1440, 1441, 1442, 1467, 1468, 1469,
                     1470, 1471, 1472, 1497, 1498, 1499}, fetched)
    -- an axis of 7 is already long enough to elide (more than twice the 3 edge items)
    s = format.array(function(i) return i end, {7, 150}, "int32")
    assert.are.equal('hl.array({{   0,    1,    2, ...,  147,  148,  149},\n' ..
                     '          { 150,  151,  152, ...,  297,  298,  299},\n' ..
                     '          { 300,  301,  302, ...,  447,  448,  449},\n' ..
                     '          ...,\n' ..
                     '          { 600,  601,  602, ...,  747,  748,  749},\n' ..
                     '          { 750,  751,  752, ...,  897,  898,  899},\n' ..
                     '          { 900,  901,  902, ..., 1047, 1048, 1049}}, "int32")', s)
    -- a short axis is shown whole
    s = format.array(function(i) return i end, {2, 600}, "int32")
    assert.are.equal('hl.array({{   0,    1,    2, ...,  597,  598,  599},\n' ..
                     '          { 600,  601,  602, ..., 1197, 1198, 1199}}, "int32")', s)
  end)

  it("summarises 1-d arrays and huge shapes, calling get only for the shown elements", function()
    assert.are.equal('hl.array({   0,    1,    2, ..., 1997, 1998, 1999}, "int32")',
                     format.array(function(i) return i end, {2000}, "int32"))
    -- the format is chosen from the shown values only
    assert.are.equal("hl.array({100.00, 100.25, 100.50, ..., 600.00, 600.25, 600.50})",
                     format.array(function(i) return 100 + i / 4 end, {2003}, "float32"))
    local calls = 0
    local s = format.array(function(i) calls = calls + 1; return i % 7 end, {1e6, 1e6}, "int64")
    assert.are.equal(36, calls)
    -- element (r, j) is (r * 1e6 + j) % 7 = (r + j) % 7
    assert.are.equal('hl.array({{0, 1, 2, ..., 5, 6, 0},\n' ..
                     '          {1, 2, 3, ..., 6, 0, 1},\n' ..
                     '          {2, 3, 4, ..., 0, 1, 2},\n' ..
                     '          ...,\n' ..
                     '          {5, 6, 0, ..., 3, 4, 5},\n' ..
                     '          {6, 0, 1, ..., 4, 5, 6},\n' ..
                     '          {0, 1, 2, ..., 5, 6, 0}}, "int64")', s)
    -- exactly 1000 elements is not summarised
    assert.is_nil(fmt(range(1000), {1000}, "int32"):find("...", 1, true))
  end)

  it("summarised 3-d arrays keep NumPy's blank lines around the elided blocks", function()
    local s = format.array(function(i) return i end, {10, 2, 60}, "int32")
    assert.are.equal('hl.array({{{   0,    1,    2, ...,   57,   58,   59},\n' ..
                     '           {  60,   61,   62, ...,  117,  118,  119}},\n' ..
                     '\n' ..
                     '          {{ 120,  121,  122, ...,  177,  178,  179},\n' ..
                     '           { 180,  181,  182, ...,  237,  238,  239}},\n' ..
                     '\n' ..
                     '          {{ 240,  241,  242, ...,  297,  298,  299},\n' ..
                     '           { 300,  301,  302, ...,  357,  358,  359}},\n' ..
                     '\n' ..
                     '          ...,\n' ..
                     '\n' ..
                     '          {{ 840,  841,  842, ...,  897,  898,  899},\n' ..
                     '           { 900,  901,  902, ...,  957,  958,  959}},\n' ..
                     '\n' ..
                     '          {{ 960,  961,  962, ..., 1017, 1018, 1019},\n' ..
                     '           {1020, 1021, 1022, ..., 1077, 1078, 1079}},\n' ..
                     '\n' ..
                     '          {{1080, 1081, 1082, ..., 1137, 1138, 1139},\n' ..
                     '           {1140, 1141, 1142, ..., 1197, 1198, 1199}}}, "int32")',
                     s)
  end)

  it("calls get once per element, in row-major order, when not summarised", function()
    local seen = {}
    format.array(function(i) seen[#seen + 1] = i; return i end, {2, 3, 4}, "int32")
    assert.are.same(range(24), seen)
  end)

  it("what it prints rebuilds the array: every dtype, rank 0 to 6, odd values", function()
    math.randomseed(7)
    local specials = {0 / 0, huge, -huge, 0, -0.0, 1e-300, 5e-324, 1.7976931348623157e308,
                      2 ^ -149, 65504, 1e-8, 3.4028234663852886e38}
    local function sample(dtype, k)
      if dtype == "bool" then return math.random() < 0.5 end
      if dtype == "int8" then return math.random(-128, 127) end
      if dtype == "uint8" then return math.random(0, 255) end
      if dtype == "int32" then return math.random(-2 ^ 31, 2 ^ 31 - 1) end
      if dtype == "int64" then return math.floor((math.random() - 0.5) * 2 ^ 62) * 4 end
      local r = format._rounder(dtype)
      local kind = k % 4
      local v
      if kind == 0 then v = (math.random() - 0.5) * 10 ^ math.random(-6, 6)
      elseif kind == 1 then v = math.random(-1000, 1000) / 8
      elseif kind == 2 then v = specials[math.random(#specials)]
      else v = (math.random() - 0.5) * 2 ^ math.random(-60, 60) end
      return r(v)
    end
    local count = 0
    for _, dtype in ipairs {"float32", "float64", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool"} do
      for rank = 0, 6 do
        for trial = 1, 4 do
          local shape, n = {}, 1
          for d = 1, rank do shape[d] = math.random(1, rank <= 2 and 9 or 3); n = n * shape[d] end
          local values = {}
          for i = 1, n do values[i] = sample(dtype, trial == 1 and 1 or i + trial) end
          assert_rebuilds(values, shape, dtype)
          count = count + 1
        end
      end
    end
    assert.are.equal(9 * 7 * 4, count)
    -- plain float64 noise needs all 17 digits, and gets them
    local noise = {}
    for i = 1, 200 do noise[i] = math.random() * 2 - 1 end
    assert_rebuilds(noise, {10, 20}, "float64")
  end)

  it("format.precision caps the digits as NumPy's precision does (no longer exact)", function()
    format.precision = 8
    assert.are.equal('hl.array({0.33333333, 0.10000000}, "float64")', fmt({1 / 3, 0.1}, {2}, "float64"))
    assert.are.equal('hl.array({1.0, 2.5}, "float64")', fmt({1, 2.5}, {2}, "float64"))
    assert.are.equal('hl.array({123.45678901}, "float64")', fmt({123.456789012}, {1}, "float64"))
    assert.are.equal('hl.array({1.00000000e-05, 3.33333333e-01}, "float64")', fmt({1e-5, 1 / 3}, {2}, "float64"))
    format.precision = nil
    assert.are.equal('hl.array({0.3333333333333333, 0.1000000000000000}, "float64")',
                     fmt({1 / 3, 0.1}, {2}, "float64"))
  end)

  it("rounds to float32, float16 and bfloat16 as a C cast does (ties to even, subnormals, overflow)", function()
    local f16, bf16, f32 = format._rounder("float16"), format._rounder("bfloat16"), format._rounder("float32")
    assert.are.equal(0.0999755859375, f16(0.1))
    assert.are.equal(65504, f16(65519))
    assert.are.equal(huge, f16(65520))               -- the tie past the largest rounds to even: inf
    assert.are.equal(2 ^ -24, f16(2 ^ -24 * 0.75))   -- smallest subnormal
    assert.are.equal(0, f16(2 ^ -26))
    assert.are.equal(1, f16(1 + 2 ^ -11))            -- tie to even, down
    assert.are.equal(1 + 2 ^ -9, f16(1 + 3 * 2 ^ -11))    -- tie to even, up
    assert.are.equal(0.10009765625, bf16(0.1))
    assert.are.equal(1, f32(1 + 2 ^ -24))            -- tie to even, down
    assert.are.equal(1 + 2 ^ -22, f32(1 + 3 * 2 ^ -24))   -- tie to even, up
    assert.are.equal(-huge, f32(-3.5e38))
    if jit then
      local ffi = require "ffi"
      local c = ffi.new("float[1]")
      math.randomseed(11)
      for _ = 1, 20000 do
        local v = (math.random() - 0.5) * 2 ^ math.random(-155, 130)
        c[0] = v
        assert.are.equal(c[0], f32(v))
      end
    end
  end)

  it("formats 1000 elements in well under 10 ms", function()
    math.randomseed(3)
    local values = {}
    for i = 1, 1000 do values[i] = math.random() * 200 - 100 end
    for _, dtype in ipairs {"float64", "float32", "int32"} do
      local get = function(i) return values[i + 1] end
      format.array(get, {1000}, dtype)
      local reps, t0 = 10, os.clock()
      for _ = 1, reps do format.array(get, {10, 100}, dtype) end
      local ms = (os.clock() - t0) / reps * 1000
      assert.is_true(ms < 10, dtype .. ": " .. ms .. " ms")
    end
  end)
end)

describe("format.tracer", function()
  it("names the dtype and shape", function()
    assert.are.equal("<traced float32[3,4]>", format.tracer("float32", {3, 4}))
    assert.are.equal("<traced int64[]>", format.tracer("int64", {}))
    assert.are.equal("<traced bool[2,0,5]>", format.tracer("bool", {2, 0, 5}))
  end)
end)

-- The same through tostring, when the engine (build/halua_core.so) is on LUA_CPATH.
local ok_hl, hl = pcall(require, "halua")
describe("tostring through the engine", function()
  if not ok_hl then
    it("needs the engine", function() pending("halua engine not loadable here") end)
    return
  end
  local function reload(s) return assert(load_string("local hl = ...; return " .. s))(hl) end

  it("prints arrays with format.array", function()
    assert.are.equal("hl.array(3.5)", tostring(hl.array(3.5)))
    assert.are.equal("hl.array({{ 1.00,  2.50, -3.00},\n          {10.00,  0.00,  4.25}})",
                     tostring(hl.array({{1, 2.5, -3}, {10, 0, 4.25}})))
    assert.are.equal('hl.array({{{0, 1},\n           {2, 3}},\n\n          {{4, 5},\n           {6, 7}}}, "int32")',
                     tostring(hl.reshape(hl.arange(8), {2, 2, 2})))
    assert.are.equal('hl.array({ true, false}, "bool")', tostring(hl.array({true, false})))
    assert.are.equal("hl.zeros({2, 0})", tostring(hl.zeros({2, 0})))
    assert.are.equal('hl.array({   0,    1,    2, ..., 1497, 1498, 1499}, "int32")', tostring(hl.arange(1500)))
  end)

  it("rebuilds engine arrays exactly, for every dtype and rank 0 to 4", function()
    math.randomseed(5)
    for _, dtype in ipairs {"float32", "float64", "int32", "int64", "uint8", "bool"} do
      for rank = 0, 4 do
        local shape = {}
        for d = 1, rank do shape[d] = (d % 3) + 1 end
        local n = 1
        for _, e in ipairs(shape) do n = n * e end
        local x = hl.array(math.random() * 100 - 50, "float64")
        x = hl.broadcast_to(x, shape) + hl.reshape(hl.arange(n), shape) * 1.37
        if dtype == "bool" then x = hl.gt(x, 0) else x = x:astype(dtype) end
        local back = reload(tostring(x))
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
