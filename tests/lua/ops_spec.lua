-- The composite operations (lua/halua/ops.lua) against NumPy, eagerly and under jit; gradients
-- through them against central differences; their errors.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"

local err_of = require("support.errors").err_of
local has = require("support.errors").has

-- each case twice: eager, and the same function under hl.jit
local function both(case, name, f, expr, inputs, opts)
  case(name, function() return f(unpack(inputs)) end, expr, inputs, opts)
  case(name .. " [jit]", function() return hl.jit(f)(unpack(inputs)) end, expr, inputs, opts)
end

math.randomseed(42)
suite("statistics and scans against NumPy", function(case)
  for _, dtype in ipairs {"float32", "float64", "int32"} do
    local x = np.rand({3, 4, 5}, -3, 3, dtype)
    local tol = dtype ~= "float64" and {rtol = 1e-5} or nil
    -- integer statistics come out float32 (as in JAX); scans keep the dtype
    local f = dtype == "int32" and ".astype(np.float32)" or ""
    both(case, "var over all " .. dtype, function(a) return hl.var(a) end, "np.var(a)" .. f, {x}, tol)
    both(case, "var axis 2 keepdims " .. dtype, function(a) return hl.var(a, 2, true) end, "np.var(a, axis=1, keepdims=True)" .. f, {x}, tol)
    both(case, "std axes {1,3} " .. dtype, function(a) return hl.std(a, {1, 3}) end, "np.std(a, axis=(0, 2))" .. f, {x}, tol)
    both(case, "any axis -1 " .. dtype, function(a) return hl.any(hl.gt(a, 2), -1) end, "np.any(a > 2, axis=-1)", {x})
    both(case, "all " .. dtype, function(a) return hl.all(a, 1) end, "np.all(a, axis=0)", {x})
    both(case, "cumsum axis 3 " .. dtype, function(a) return hl.cumsum(a, 3) end, "np.cumsum(a, axis=2).astype(a.dtype)", {x}, tol)
    both(case, "cumsum flattened " .. dtype, function(a) return hl.cumsum(a) end, "np.cumsum(a).astype(a.dtype)", {x}, tol)
    both(case, "cumprod axis 1 " .. dtype, function(a) return hl.cumprod(a, 1) end, "np.cumprod(a, axis=0).astype(a.dtype)", {x}, tol)
  end
  local b = np.rand({7}, 0, 1, "bool")
  both(case, "cumsum of bool counts", function(a) return hl.cumsum(a) end, "np.cumsum(a).astype(np.int32)", {b})
  local u, v = np.rand({3}, -1, 1), np.rand({2, 2}, -1, 1)
  both(case, "outer flattens", function(a, c) return hl.outer(a, c) end, "np.outer(a, b)", {u, v})
  both(case, "cumsum of a zero-length axis", function(a) return hl.cumsum(a, 2) end, "np.cumsum(a, axis=1)", {hl.zeros({2, 0})})
  -- found by the program fuzzer: std of a 2-byte float rounded twice (the root of the rounded
  -- variance: 1.076 here); it is the float32 std rounded once, as documented
  local h = hl.array({0.7021484375, 3.5546875, 1.9091796875, 3.2734375, 3.21484375}, "float16")
  both(case, "std of float16 rounds once", function(a) return hl.std(a, -1, true) end,
       "np.std(a.astype(np.float32), axis=-1, keepdims=True).astype(np.float16)", {h}, {rtol = 0, atol = 0})
  both(case, "std of bfloat16 rounds once", function(a) return hl.std(a:astype("bfloat16")) end,
       "bf16(np.std(a.astype(np.float32)))", {h}, {rtol = 0, atol = 0})
end)

suite("shape operations against NumPy", function(case)
  local x = np.rand({2, 3, 4}, -5, 5)
  both(case, "flip all axes", function(a) return hl.flip(a) end, "np.flip(a)", {x})
  both(case, "flip axis 2", function(a) return hl.flip(a, 2) end, "np.flip(a, axis=1)", {x})
  both(case, "flip axes {1,-1}", function(a) return hl.flip(a, {1, -1}) end, "np.flip(a, axis=(0, 2))", {x})
  local y = np.rand({2, 3, 4}, -5, 5)
  both(case, "stack axis 1", function(a, b) return hl.stack({a, b}) end, "np.stack([a, b])", {x, y})
  both(case, "stack axis 3", function(a, b) return hl.stack({a, b}, 3) end, "np.stack([a, b], axis=2)", {x, y})
  both(case, "stack axis -1", function(a, b) return hl.stack({a, b}, -1) end, "np.stack([a, b], axis=-1)", {x, y})
  for k, n in ipairs {2, 4} do
    both(case, "split into " .. n .. " equal parts, part " .. k, function(a) return hl.split(a, n, 3)[k] end,
         "np.split(a, " .. n .. ", axis=2)[" .. (k - 1) .. "]", {x})
  end
  for k = 1, 3 do
    both(case, "split at positions {2, 3}, part " .. k, function(a) return hl.split(a, {2, 3}, 2)[k] end,
         "np.split(a, [1, 2], axis=1)[" .. (k - 1) .. "]", {x})
  end
  both(case, "tile by {2, 1, 3}", function(a) return hl.tile(a, {2, 1, 3}) end, "np.tile(a, (2, 1, 3))", {x})
  both(case, "tile with more reps than axes", function(a) return hl.tile(a, {2, 1, 1, 2}) end, "np.tile(a, (2, 1, 1, 2))", {x})
  both(case, "tile by a number", function(a) return hl.tile(a, 3) end, "np.tile(a, 3)", {x})
  both(case, "repeat along axis 2", function(a) return hl["repeat"](a, 3, 2) end, "np.repeat(a, 3, axis=1)", {x})
  both(case, "repeat flattened", function(a) return hl["repeat"](a, 2) end, "np.repeat(a, 2)", {x})
  both(case, "pad every side", function(a) return hl.pad(a, 1) end, "np.pad(a, 1)", {x})
  both(case, "pad per axis with a value", function(a) return hl.pad(a, {{0, 1}, {2, 0}, {1, 1}}, -7) end,
       "np.pad(a, ((0, 1), (2, 0), (1, 1)), constant_values=-7)", {x})
  local xi = np.rand({3, 5}, -9, 9, "int32")
  both(case, "pad an int array", function(a) return hl.pad(a, {1, 2}) end, "np.pad(a, (1, 2))", {xi})
end)

suite("gathers against NumPy", function(case)
  local x = np.rand({3, 5, 2}, -5, 5)
  local idx = hl.array({5, 1, 1, 3}, "int32")
  both(case, "take along axis 2", function(a, i) return hl.take(a, i, 2) end, "np.take(a, b - 1, axis=1)", {x, idx})
  both(case, "take flattened", function(a, i) return hl.take(a, i) end, "np.take(a, b - 1)", {x, idx})
  local idx2 = hl.array({{1, 2}, {3, 3}}, "int64")
  both(case, "take with 2-d indices", function(a, i) return hl.take(a, i, 1) end, "np.take(a, b - 1, axis=0)", {x, idx2})
  local xi = np.rand({4, 3}, -9, 9, "int32")
  both(case, "take of ints", function(a, i) return hl.take(a, i, 1) end, "np.take(a, b - 1, axis=0)", {xi, hl.array({4, 2}, "int32")})
  local along = hl.array({{{1, 2}}, {{5, 5}}, {{3, 1}}}, "int32")
  both(case, "take_along_axis 2", function(a, i) return hl.take_along_axis(a, i, 2) end,
       "np.take_along_axis(a, b - 1, axis=1)", {x, along})
  local wide = np.rand({3, 4, 1}, -5, 5)
  both(case, "take_along_axis broadcasting x's size-1 axis", function(a, i) return hl.take_along_axis(a, i, 2) end,
       "np.take_along_axis(np.broadcast_to(a, (3, 4, 2)), b - 1, axis=1)", {wide, hl.array({{{1, 4}, {2, 2}, {3, 1}}}, "int64")})
  both(case, "take_along_axis broadcasting the indices' size-1 axis", function(a, i) return hl.take_along_axis(a, i, 2) end,
       "np.take_along_axis(a, np.broadcast_to(b - 1, (3, 2, 2)), axis=1)", {x, hl.array({{{5, 1}, {2, 2}}}, "int32")})
  local long = np.rand({300}, -1, 1)
  both(case, "take with uint8 indices from an axis longer than 255", function(a, i) return hl.take(a, i) end,
       "np.take(a, b.astype(np.int64) - 1)", {long, hl.array({1, 255, 200, 7}, "uint8")})
  both(case, "take with repeated indices and a 0-d index", function(a, i) return hl.take(a, i, 3) end,
       "np.take(a, b - 1, axis=2)", {x, hl.array(2, "int32")})
  both(case, "take of bools", function(a, i) return hl.take(a, i, 1) end, "np.take(a, b - 1, axis=0)",
       {hl.array({true, false, true}), hl.array({3, 2, 2, 1}, "int32")})
  both(case, "take of nothing", function(a, i) return hl.take(a, i, 2) end, "np.take(a, b - 1, axis=1)",
       {x, hl.zeros({0}, "int32")})
  local classes = hl.array({{1, 4}, {2, 2}}, "int32")
  both(case, "one_hot", function(i) return hl.one_hot(i, 4) end, "np.eye(4, dtype=np.float32)[a - 1]", {classes})
end)

suite("einsum against NumPy", function(case)
  local a, b = np.rand({3, 4}, -1, 1), np.rand({4, 5}, -1, 1)
  local c, d = np.rand({2, 3, 4}, -1, 1), np.rand({2, 4, 5}, -1, 1)
  local sq, v = np.rand({4, 4}, -1, 1), np.rand({4}, -1, 1)
  local tol = {rtol = 1e-5, atol = 1e-6}
  for _, t in ipairs {
    {"ij,jk->ik", {a, b}}, {"ij,jk", {a, b}}, {"ik,kj->ji", {a, b}}, {"bij,bjk->bik", {c, d}},
    {"bij,bjk->kbi", {c, d}}, {"ij->ji", {a}}, {"ij->", {a}}, {"ij->j", {a}}, {"ii->i", {sq}}, {"ii", {sq}},
    {"i,j->ij", {v, v}}, {"ij,j->i", {sq, v}}, {"ij,ij->i", {a, a}}, {"ij,kj->ikj", {a, a}}, {"bij,jk->bik", {c, b}},
    {"ii,i->i", {sq, v}},
  } do
    local spec, ins = t[1], t[2]
    local names = #ins == 1 and "a" or "a, b"
    both(case, "einsum " .. spec, function(...) return hl.einsum(spec, ...) end, string.format("np.einsum(%q, %s)", spec, names), ins, tol)
  end
end)

describe("gradients through composites", function()
  local F64 = "float64"
  local function numeric_grad(f, x)
    local t, g = hl.flatten(x):totable(), {}
    for i = 1, #t do
      local up, dn = {unpack(t)}, {unpack(t)}
      up[i], dn[i] = t[i] + 1e-6, t[i] - 1e-6
      g[i] = (f(hl.reshape(hl.array(up, F64), x.shape)):item() - f(hl.reshape(hl.array(dn, F64), x.shape)):item()) / 2e-6
    end
    return g
  end
  local x = hl.array({{0.3, -1.2, 0.8}, {1.5, 0.2, -0.4}}, F64)
  local w = hl.array({{1, -2, 3, 0.5}, {0.1, 2, -1, 4}}, F64)
  for name, f in pairs {
    cumsum = function(a) return hl.sum(hl.cumsum(a, 2) * hl.sin(a)) end,
    cumprod = function(a) return hl.sum(hl.cumprod(a, 2)) end,
    var = function(a) return hl.var(a, 2):sum() + hl.std(a) end,
    flip = function(a) return hl.sum(hl.flip(a, 2) * a) end,
    einsum = function(a) return hl.sum(hl.einsum("ij,kj->ik", a, a) ^ 2) + hl.einsum("ij->", hl.sin(a)) end,
    tile_repeat = function(a) return hl.sum(hl.tile(a, {2, 2}) ^ 2) + hl.sum(hl["repeat"](a, 2, 1) * 3) end,
    pad_take = function(a) return hl.sum(hl.pad(a, 1, 2) ^ 2) + hl.sum(hl.take(a, hl.array({3, 1, 3}, "int32"), 2) * 5) end,
    -- repeated indices: their cotangents add up in the scatter
    take_repeated = function(a) return hl.sum(hl.sin(hl.take(a, hl.array({{2, 2}, {1, 2}}, "int32"), 1)) * 3) end,
    take_along = function(a) return hl.sum(hl.take_along_axis(a, hl.array({{3, 3, 1}, {2, 1, 1}}, "int64"), 2) ^ 3) end,
    stack_split = function(a) local p = hl.split(hl.stack({a, a * 2}, 3), 3, 2) return hl.sum(p[1] * p[3] + p[2]) end,
  } do
    it(name .. " against central differences, eager and under jit", function()
      local want = numeric_grad(f, x)
      for _, g in ipairs {hl.grad(f)(x), hl.jit(hl.grad(f))(x)} do
        local got = hl.flatten(g):totable()
        for i = 1, #want do
          assert.is_true(math.abs(got[i] - want[i]) < 1e-6 * math.max(1, math.abs(want[i])), name .. " element " .. i)
        end
      end
    end)
  end
  local _ = w
end)

describe("gather and scatter_add (the primitives under take)", function()
  it("read 0 and drop writes for out-of-range indices inside jit, where no error can be raised", function()
    local f = hl.jit(function(a, i) return hl.take(a, i), hl.take_along_axis(hl.reshape(a, {2, 2}), hl.reshape(i, {2, 2}), 2) end)
    local t, ta = f(hl.array({10, 20, 30, 40}), hl.array({0, 2, 5, 1}, "int32"))
    assert.are.same({0, 20, 0, 10}, t:totable())
    -- row 1 asks for positions 0 and 2 of its row; position 0 must not read row 0's last element
    assert.are.same({{0, 20}, {0, 30}}, ta:totable())
    local s = hl.core.scatter_add(hl.array({1, 2, 3, 4}), hl.array({2, -1, 2, 7}, "int32"), 0, 3)
    assert.are.same({0, 0, 4}, s:totable())
  end)
  it("scatter_add is gather's transpose: <gather(x), y> = <x, scatter_add(y)>", function()
    local x, y = np.rand({5, 3}, -1, 1, "float64"), np.rand({3, 2, 4, 3}, -1, 1, "float64")
    local idx = hl.array({{{4, 0, 4, 2}, {1, 1, 3, 0}}, {{2, 2, 2, 2}, {0, 1, 4, 3}}, {{3, 3, 0, 1}, {4, 4, 4, 4}}}, "int64")
    local lhs = hl.sum(hl.core.gather(x, idx, 0) * y):item()
    local rhs = hl.sum(x * hl.core.scatter_add(y, idx, 0, 5)):item()
    assert.is_true(math.abs(lhs - rhs) < 1e-12)
  end)
  it("check their operands", function()
    has(err_of(hl.core.gather, hl.ones(3), hl.array({1.5}), 0), "halua: gather: indices must be integers, got float32")
    has(err_of(hl.core.gather, hl.ones(3), hl.array({1}, "int32"), 1), "halua: gather: axis 2 out of range for shape [3]")
    has(err_of(hl.core.gather, hl.ones({0}), hl.array({0}, "int32"), 0), "halua: gather: cannot take from axis 1 of extent 0")
    has(err_of(hl.core.scatter_add, hl.ones({2, 3}), hl.array({1, 1}, "int32"), 1, 4), "halua: scatter_add: indices [2] do not match values [2,3] at axis 2")
    has(err_of(hl.core.scatter_add, hl.array({true}), hl.array({0}, "int32"), 0, 4), "halua: scatter_add: cannot add bool values")
  end)
end)

describe("errors of the composites", function()
  it("name the function and the problem", function()
    local x = hl.ones({2, 3})
    has(err_of(hl.split, x, 2, 2), "halua: split: axis 2 of length 3 does not divide into 2 equal parts")
    has(err_of(hl.split, x, "a"), "halua: split: expected a number of parts or a list of positions, got string")
    has(err_of(hl.stack, {x, hl.ones({3})}), "halua: stack: array 2 has shape [3], array 1 has [2,3]")
    has(err_of(hl.stack, {}), "halua: stack: expected a non-empty list of arrays")
    has(err_of(hl.tile, x, {-1}), "halua: tile: repetitions must be non-negative integers, got -1")
    has(err_of(hl["repeat"], x, 1.5), "halua: repeat: repetitions must be a non-negative integer, got 1.5")
    has(err_of(hl.pad, x, {-1, 2}), "halua: pad: widths must be non-negative integers")
    has(err_of(hl.take, x, hl.array({0}, "int32"), 2), "halua: take: index 0 is out of range 1..3")
    has(err_of(hl.take, x, hl.array({1.5}), 2), "halua: take: indices must be integers, got float32")
    has(err_of(hl.take_along_axis, x, hl.array({1}, "int32"), 1), "halua: take_along_axis: indices need the array's rank 2, got 1")
    has(err_of(hl.one_hot, hl.array({1}, "int32"), -2), "halua: one_hot: n must be a non-negative integer, got -2")
    has(err_of(hl.cumsum, x, 3), "halua: cumsum: axis 3 is out of range for 2 dimensions")
    has(err_of(hl.flip, x, {1, 1}), "halua: flip: axis 1 repeated")
    has(err_of(hl.einsum, "ij,jk->ik", x), "halua: einsum: the spec names 2 operands, got 1")
    has(err_of(hl.einsum, "ijk->i", x), "halua: einsum: operand 1 has 2 axes but 'ijk' names 3")
    has(err_of(hl.einsum, "ij,jk->ik", x, hl.ones({4, 2})), "halua: einsum: label j has extents 3 and 4")
    has(err_of(hl.einsum, "...i->i", x), "halua: einsum: ellipsis ('...') is not supported yet")
    has(err_of(hl.einsum, "ij->q", x), "halua: einsum: output label q is not in any operand")
  end)
end)
