-- Indexing with index arrays: x:at(...) with integer arrays and set/add/mul/min/max against
-- NumPy's fancy assignment and ufunc.at (duplicates, negatives, mixed with numbers and ranges,
-- broadcast updates, several dtypes), eager and under jit; segment_sum/max/min against ufunc.at;
-- dynamic_slice and dynamic_update_slice against NumPy slices with jax.lax's clamping; their
-- derivatives against central differences, vmap against a loop, and the errors' words.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"
local diff_check = require "support.diff_check"

math.randomseed(22)

local ufunc = {add = "np.add.at", mul = "np.multiply.at", min = "np.minimum.at", max = "np.maximum.at"}
-- the NumPy expression of x:at(key):mode(c), a the operand, c the update, key an expression
-- (index arrays arrive 1-based: np1(b) makes them 0-based)
local function np_at(mode, key)
  if mode == "set" then return "(lambda o: (o.__setitem__(" .. key .. ", c), o)[1])(a.copy())" end
  return "(lambda o: (" .. ufunc[mode] .. "(o, " .. key .. ", c), o)[1])(a.copy())"
end
local function np1(name) return "np.where(" .. name .. " < 0, " .. name .. ", " .. name .. " - 1)" end
local modes = {"set", "add", "mul", "min", "max"}

-- index arrays of dtype dt with values in 1..n and -n..-1, duplicates likely
local function indices(shape, n, dt)
  local x = np.rand(shape, 1, n + 1, "int32")
  local v = hl.reshape(x, {x.size}):totable()
  for i = 1, #v do if math.random() < 0.3 and dt ~= "uint8" then v[i] = v[i] - n - 1 end end
  return hl.reshape(hl.array(v, dt), shape)
end

suite("x:at(index arrays) against NumPy", function(case)
  for _, dtype in ipairs {"float32", "float64", "int32", "int64"} do
    for _, it in ipairs {"int32", "int64", "uint8"} do
      local x = np.rand({5, 4}, -5, 5, dtype)
      local i = indices({6}, 5, it)
      local j = indices({6}, 4, it)
      local c1 = np.rand({6, 4}, -3, 3, dtype)
      local c2 = np.rand({6}, -3, 3, dtype)
      for _, mode in ipairs(modes) do
        local name = string.format("%s %s indices %s", dtype, it, mode)
        case(name .. ": one array on axis 1", function() return x:at(i)[mode](x:at(i), c1) end,
             np_at(mode, "(" .. np1("b") .. ",)"), {x, i, c1})
        case(name .. ": two arrays", function() local u = x:at({i, j}); return u[mode](u, c2) end,
             np_at(mode, "(" .. np1("b") .. ", " .. np1("d") .. ")"), {x, i, c2, j})
      end
    end
  end
  local x3 = np.rand({4, 5, 6}, -5, 5, "float64")
  local i = indices({3}, 4, "int32")
  local k = indices({2, 3}, 6, "int32")
  local j = indices({3}, 5, "int64")
  for _, mode in ipairs(modes) do
    local function at(key, v) local u = x3:at(key); return u[mode](u, v) end
    local c = np.rand({4, 3, 6}, -3, 3, "float64")
    case("axis 2 of three, " .. mode, function() return at({{}, j}, c) end,
         np_at(mode, "(slice(None), " .. np1("b") .. ")"), {x3, j, c})
    local cn = np.rand({2, 3, 5}, -3, 3, "float64")
    case("non-adjacent arrays put B first, " .. mode, function() return at({i, {}, k}, cn) end,
         np_at(mode, "(" .. np1("b") .. ", slice(None), " .. np1("d") .. ")"), {x3, i, cn, k})
    local cb = np.rand({4, 2, 3}, -3, 3, "float64")
    case("a number and an array adjacent, " .. mode, function() return at({{}, 2, k}, cb) end,
         np_at(mode, "(slice(None), 1, " .. np1("b") .. ")"), {x3, k, cb})
    local cr = np.rand({3, 3, 6}, -3, 3, "float64")
    case("an array and a range, " .. mode, function() return at({i, {2, 4}}, cr) end,
         np_at(mode, "(" .. np1("b") .. ", slice(1, 4))"), {x3, i, cr})
    local cs = np.rand({2, 5, 2, 3}, -3, 3, "float64")
    case("a strided reversed range and a 2-d array, " .. mode, function() return at({{-1, 1, -2}, {}, k}, cs) end,
         np_at(mode, "(slice(None, None, -2), slice(None), " .. np1("b") .. ")"), {x3, k, cs})
    case("a scalar update broadcast, " .. mode, function() return at({i, j}, 2.5) end,
         np_at(mode, "(" .. np1("b") .. ", " .. np1("d") .. ")"), {x3, i, 2.5, j})
    local row = np.rand({6}, -3, 3, "float64")
    case("a row update broadcast, " .. mode, function() return at({i, j}, row) end,
         np_at(mode, "(" .. np1("b") .. ", " .. np1("d") .. ")"), {x3, i, row, j})
    case("a 0-d index array, " .. mode, function() return at({hl.array(-2, "int32")}, row) end,
         np_at(mode, "(-2,)"), {x3, x3, row})
  end
  -- jit: the same pipelines traced
  local f = hl.jit(function(x, i, j, c) return x:at({i, {}, j}):add(c), x:at({i, {}, j}):max(c), x:at({i, {}, j}):set(c) end)
  local ji, jj, jc = indices({5}, 4, "int32"), indices({5}, 6, "int32"), np.rand({5, 5}, -3, 3, "float64")
  for n, mode in ipairs {"add", "max", "set"} do
    case("jit: " .. mode .. " with non-adjacent arrays", function() return select(n, f(x3, ji, jj, jc)) end,
         np_at(mode, "(" .. np1("b") .. ", slice(None), " .. np1("d") .. ")"), {x3, ji, jc, jj})
  end
  local b = np.rand({5, 3}, 0, 1, "bool")
  case("bool: set", function() return b:at(hl.array({2, 2, 5}, "int32")):set(true) end,
       np_at("set", "([1, 1, 4],)"), {b, b, hl.array(true)})
  case("bool: max is a logical or", function() return b:at({{}, hl.array({1, 3}, "int8")}):max(hl.array({true, false})) end,
       np_at("max", "(slice(None), [0, 2])"), {b, b, hl.array({true, false})})
end)

describe("x:at(index arrays) semantics", function()
  it("drops out-of-range indices (0, past either end) as JAX's default scatter mode does", function()
    local x = hl.array({1, 2, 3, 4, 5})
    local i = hl.array({1, 6, 0, -6, 3, -1}, "int32")
    local u = hl.array({10, 20, 30, 40, 50, 60})
    assert.same({11, 2, 53, 4, 65}, x:at(i):add(u):totable())
    assert.same({10, 2, 50, 4, 60}, x:at(i):set(u):totable())
    assert.same({10, 2, 150, 4, 300}, x:at(i):mul(u):totable())
    assert.same({11, 2, 53, 4, 65}, hl.jit(function(a, b, c) return a:at(b):add(c) end)(x, i, u):totable())
  end)
  it("set: the last write in index order wins", function()
    local x = hl.zeros({3, 2})
    local r = x:at(hl.array({2, 1, 2, 2}, "int64")):set(hl.array({{1, 1}, {2, 2}, {3, 3}, {4, 4}}))
    assert.same({{2, 2}, {4, 4}, {0, 0}}, r:totable())
  end)
  it("casts the update to x's dtype, as JAX does", function()
    local r = hl.array({1, 2, 3}, "int32"):at(hl.array({2}, "int32")):add(hl.array({2.75}))
    assert.equal("int32", r.dtype)
    assert.same({1, 4, 3}, r:totable())
  end)
  it("leaves x unchanged (arrays are values)", function()
    local x = hl.array({1, 2, 3})
    local _ = x:at(hl.array({1}, "int32")):set(9)
    assert.same({1, 2, 3}, x:totable())
  end)
  it("traces one scatter primitive per update, no host loop", function()
    local text = tostring(hl.trace(function(x, i) return x:at(i):max(1) end, hl.zeros({4, 3}), hl.array({1, 2}, "int32")))
    assert.truthy(text:find("scatter", 1, true))
    assert.truthy(text:find("mode=max", 1, true))
  end)
end)

describe("x:at(index arrays) errors", function()
  local x = hl.zeros({4, 3})
  it("rejects float index arrays", function()
    assert.has_error(function() x:at(hl.array({1.0, 2.0})):set(1) end,
      "halua: at(...):set: index arrays must have an integer dtype (int8, int32, int64, uint8), got float32[2] for axis 1; convert with idx:astype(\"int32\") if the values are whole")
  end)
  it("rejects boolean masks and names hl.where", function()
    local ok, err = pcall(function() x:at({{}, hl.array({true, false, true})}):add(1) end)
    assert.is_false(ok)
    assert.truthy(err:find("got bool[3] for axis 2; for a boolean mask use hl.where", 1, true), err)
  end)
  it("names both shapes when the update does not broadcast", function()
    assert.has_error(function() x:at(hl.array({1, 2}, "int32")):add(hl.ones({2, 2})) end,
      "halua: at(...):add: the update value of shape [2,2] does not broadcast to the selection's shape [2,3]")
  end)
  it("refuses an update that would broadcast the selection to a larger shape", function()
    assert.has_error(function() x:at({hl.array({1}, "int32"), {}}):add(hl.ones({3, 1})) end,
      "halua: at(...):add: the update value of shape [3,1] does not broadcast to the selection's shape [1,3]")
  end)
  it("names index arrays that do not broadcast together", function()
    assert.has_error(function() x:at({hl.array({1, 2}, "int32"), hl.array({1, 2, 3}, "int32")}):set(0) end,
      "halua: at(...):set: index arrays of shapes [2] and [3] do not broadcast together")
  end)
  it("refuses to add or multiply bool values", function()
    local ok, err = pcall(function() hl.array({true}):at(hl.array({1}, "int32")):add(true) end)
    assert.is_false(ok)
    assert.truthy(err:find("at(...):add: cannot add bool values", 1, true), err)
  end)
  it("rejects too many indices and non-array updates", function()
    assert.has_error(function() x:at({hl.array({1}, "int32"), 1, 1}):set(0) end, "halua: at(...):set: 3 indices for shape [4,3]")
    assert.has_error(function() x:at(hl.array({1}, "int32")):set("a") end,
      "halua: at(...):set: the update value must be a number, boolean or array, got string")
  end)
end)

describe("x:at(index arrays) derivatives", function()
  local flat, numeric, close = diff_check.flat, diff_check.numeric, diff_check.close
  local w = np.rand({4, 3}, -1, 1, "float64")
  -- duplicates (row 2 three times) and an out-of-range index (9, dropped)
  local i = hl.array({2, 4, 2, 9, -3}, "int32")
  for _, mode in ipairs(modes) do
    it(mode .. ": x's and the update's gradients match central differences", function()
      local x = np.rand({4, 3}, -2, 2, "float64")
      local u = np.rand({5, 3}, -2, 2, "float64")
      if mode == "mul" then u = hl.where(hl.eq(hl.arange(15):reshape({5, 3}) % 7, 3), 0, u) end   -- zero factors
      local function f(a, b) local t = a:at(i); return hl.sum(t[mode](t, b) * w) end
      local g = hl.grad(f, {1, 2})(x, u)
      close(g[1], numeric(function(a) return f(a, u) end, x), 1e-6, mode .. " dx")
      close(g[2], numeric(function(b) return f(x, b) end, u), 1e-6, mode .. " du")
      local jg = hl.jit(hl.grad(f, {1, 2}))(x, u)
      close(jg[1], flat(g[1]), 1e-12, mode .. " dx under jit")
      close(jg[2], flat(g[2]), 1e-12, mode .. " du under jit")
    end)
  end
  it("min and max share the derivative between tied winners evenly (JAX's convention)", function()
    local x = hl.array({1.0, 5.0}, "float64")
    local u = hl.array({1.0, 1.0, 7.0}, "float64")
    local idx = hl.array({1, 1, 2}, "int32")
    local g = hl.grad(function(a, b) return hl.sum(a:at(idx):min(b)) end, {1, 2})(x, u)
    assert.same({1 / 3, 1}, g[1]:totable())
    assert.same({1 / 3, 1 / 3, 0}, g[2]:totable())
  end)
  it("second derivatives: the hessian matches differences of the gradient in every mode", function()
    local idx = hl.array({1, 2, 2}, "int32")
    for _, mode in ipairs(modes) do
      local f = function(x)
        local t = x:at(idx)
        return hl.sum(t[mode](t, hl.array({0.5, 2, 3}, "float64") * x[1]) ^ 3)
      end
      local x = hl.array({1.5, -0.7, 0.3}, "float64")
      local h, g, e = hl.hessian(f)(x), hl.grad(f), 1e-6
      for k = 1, 3 do
        local d = hl.zeros({3}, "float64"):at({k}):set(e)
        close(h[{{}, k}], flat((g(x + d) - g(x - d)) / (2 * e)), 1e-5, mode .. " column " .. k)
      end
    end
  end)
  it("forward mode agrees with reverse mode", function()
    local x, u = np.rand({4, 3}, -2, 2, "float64"), np.rand({5, 3}, -2, 2, "float64")
    local tx, tu = np.rand({4, 3}, -1, 1, "float64"), np.rand({5, 3}, -1, 1, "float64")
    for _, mode in ipairs(modes) do
      local function f(a, b) local t = a:at(i); return hl.sum(t[mode](t, b) * w) end
      local _, jv = hl.jvp(f, {x, u}, {tx, tu})
      local g = hl.grad(f, {1, 2})(x, u)
      local want = hl.sum(g[1] * tx) + hl.sum(g[2] * tu)
      assert.is_true(math.abs(jv:item() - want:item()) < 1e-10, mode)
    end
  end)
end)

describe("x:at(index arrays) under vmap", function()
  local xs = np.rand({3, 5, 2}, -2, 2, "float32")
  local is = indices({3, 4}, 5, "int32")
  local us = np.rand({3, 4, 2}, -2, 2, "float32")
  local function loop(f, ins, axes)
    local outs = {}
    for b = 1, 3 do
      local args = {}
      for k, v in ipairs(ins) do args[k] = axes[k] and v[b] or v end
      outs[b] = f(unpack(args))
    end
    return hl.stack(outs)
  end
  for _, mode in ipairs(modes) do
    local function f(x, i, u) local t = x:at({i, {}}); return t[mode](t, u) end
    for _, axes in ipairs {{1, 1, 1}, {1, false, false}, {false, 1, 1}, {false, false, 1}, {1, 1, false}} do
      it(string.format("%s, in_axes {%s, %s, %s}", mode, tostring(axes[1]), tostring(axes[2]), tostring(axes[3])), function()
        local ins = {axes[1] and xs or xs[1], axes[2] and is or is[1], axes[3] and us or us[1]}
        local got = hl.vmap(f, axes)(unpack(ins))
        assert.same(loop(f, ins, axes):totable(), got:totable())
        local jgot = hl.jit(hl.vmap(f, axes))(unpack(ins))
        assert.same(got:totable(), jgot:totable())
      end)
    end
  end
  it("a gradient under vmap matches per-example gradients", function()
    local f = function(x, i, u) return hl.sum(x:at(i):set(u) ^ 2) end
    local xs64, us64 = xs:astype("float64"), us:astype("float64")
    local got = hl.vmap(hl.grad(f, {1, 3}))(xs64, is, us64)
    for b = 1, 3 do
      local g = hl.grad(f, {1, 3})(xs64[b], is[b], us64[b])
      assert.same(g[1]:totable(), got[1][b]:totable())
      assert.same(g[2]:totable(), got[2][b]:totable())
    end
  end)
end)

suite("segment_sum, segment_max, segment_min against NumPy", function(case)
  for _, dtype in ipairs {"float32", "float64", "int32", "int64", "uint8"} do
    for _, shape in ipairs {{7}, {9, 3}, {6, 2, 2}} do
      local data = np.rand(shape, 0, 9, dtype)
      local ids = np.rand({shape[1]}, 1, 5, "int32")   -- 1..4; segments 5 and 6 stay empty
      local name = dtype .. " " .. table.concat(shape, "x")
      local empty = {max = {float32 = "-np.inf", float64 = "-np.inf"}, min = {float32 = "np.inf", float64 = "np.inf"}}
      for _, op in ipairs {"sum", "max", "min"} do
        local init = op == "sum" and "0" or empty[op][dtype] or
                     ("np.iinfo(a.dtype)." .. (op == "max" and "min" or "max"))
        local fn = ({sum = "np.add.at", max = "np.maximum.at", min = "np.minimum.at"})[op]
        local expr = string.format("(lambda o: (%s(o, b - 1, a), o)[1])(np.full((6,) + a.shape[1:], %s, a.dtype))", fn, init)
        case(string.format("segment_%s %s", op, name), function() return hl["segment_" .. op](data, ids, 6) end, expr, {data, ids})
      end
    end
  end
  local data, ids = np.rand({8, 2}, -3, 3, "float32"), hl.array({3, 1, 3, 2, 1, 1, 3, 2}, "int64")
  case("num_segments inferred eagerly (the largest id)", function() return hl.segment_sum(data, ids) end,
       "(lambda o: (np.add.at(o, b - 1, a), o)[1])(np.zeros((3, 2), a.dtype))", {data, ids})
  case("under jit", function() return hl.jit(function(d, i) return hl.segment_max(d, i, 3) end)(data, ids) end,
       "(lambda o: (np.maximum.at(o, b - 1, a), o)[1])(np.full((3, 2), -np.inf, a.dtype))", {data, ids})
  case("hl.ops.segment_min", function() return hl.ops.segment_min(data, ids, 4) end,
       "(lambda o: (np.minimum.at(o, b - 1, a), o)[1])(np.full((4, 2), np.inf, a.dtype))", {data, ids})
end)

describe("segment reductions", function()
  it("drop out-of-range ids (0, negative, past num_segments)", function()
    local r = hl.segment_sum(hl.array({1, 2, 4, 8, 16}), hl.array({0, 1, -1, 3, 2}, "int32"), 2)
    assert.same({2, 16}, r:totable())
  end)
  it("differentiate: sum passes the cotangent by id, max through the winner", function()
    local flat, numeric, close = diff_check.flat, diff_check.numeric, diff_check.close
    local d = np.rand({6, 2}, -2, 2, "float64")
    local ids = hl.array({2, 1, 2, 3, 1, 2}, "int32")
    local w = np.rand({3, 2}, -1, 1, "float64")
    for _, op in ipairs {"sum", "max", "min"} do
      local f = function(x) return hl.sum(hl["segment_" .. op](x, ids, 3) * w) end
      close(hl.grad(f)(d), numeric(f, d), 1e-6, op)
      close(hl.jit(hl.grad(f))(d), flat(hl.grad(f)(d)), 1e-12, op .. " under jit")
    end
  end)
  it("batch under vmap (ids mapped or not)", function()
    local d = np.rand({3, 5}, -2, 2, "float32")
    local ids = np.rand({3, 5}, 1, 4, "int32")
    local got = hl.vmap(function(x, i) return hl.segment_max(x, i, 3) end)(d, ids)
    local got2 = hl.vmap(function(x) return hl.segment_sum(x, ids[1], 3) end)(d)
    for b = 1, 3 do
      assert.same(hl.segment_max(d[b], ids[b], 3):totable(), got[b]:totable())
      assert.same(hl.segment_sum(d[b], ids[1], 3):totable(), got2[b]:totable())
    end
  end)
  it("raise errors that name the function and what to pass", function()
    assert.has_error(function() hl.jit(function(d, i) return hl.segment_sum(d, i) end)(hl.ones({3}), hl.array({1, 2, 1}, "int32")) end,
      "halua: segment_sum: num_segments is required under jit (the result's shape cannot depend on traced ids)")
    assert.has_error(function() hl.segment_max(hl.ones({3}), hl.array({1, 2}, "int32"), 2) end,
      "halua: segment_max: segment_ids int32[2] must be 1-d with one id per row of data float32[3]")
    assert.has_error(function() hl.segment_min(hl.ones({2}), hl.array({1, 2}), 2) end,
      "halua: segment_min: segment_ids must have an integer dtype, got float32")
    assert.has_error(function() hl.segment_sum(hl.ones({2}), hl.array({1, 2}, "int32"), 1.5) end,
      "halua: segment_sum: num_segments must be a non-negative integer, got 1.5")
  end)
end)

-- jax.lax's clamp: the 0-based start that keeps the window inside
local function clamp0(s, n, k)
  s = s < 0 and n + s or s - 1
  return math.max(0, math.min(s, n - k))
end

suite("dynamic_slice and dynamic_update_slice against NumPy", function(case)
  local x = np.rand({5, 6, 3}, -4, 4, "float64")
  local xi = np.rand({5, 6}, -9, 9, "int32")
  local starts = {{1, 1, 1}, {2, 3, 1}, {5, 6, 3}, {-2, -1, 2}, {0, 9, -9}}
  for _, st in ipairs(starts) do
    local k = {2, 4, 3}
    local s = {}
    for d = 1, 3 do s[d] = clamp0(st[d], x.shape[d], k[d]) end
    local sl = string.format("a[%d:%d, %d:%d, %d:%d]", s[1], s[1] + 2, s[2], s[2] + 4, s[3], s[3] + 3)
    local name = table.concat(st, ",")
    case("dynamic_slice, number starts " .. name, function() return hl.dynamic_slice(x, st, k) end, sl, {x})
    local traced = {}
    for d = 1, 3 do traced[d] = hl.array(st[d], "int32") end
    case("dynamic_slice, array starts under jit " .. name, function()
      return hl.jit(function(a, s1, s2, s3) return hl.dynamic_slice(a, {s1, s2, s3}, k) end)(x, unpack(traced))
    end, sl, {x})
    case("dynamic_slice, a 1-d start array " .. name, function()
      return hl.dynamic_slice(x, hl.array(st, "int64"), k)
    end, sl, {x})
    local u = np.rand(k, 10, 20, "float64")
    local upd = string.format("(lambda o: (o.__setitem__((slice(%d, %d), slice(%d, %d), slice(%d, %d)), b), o)[1])(a.copy())",
                              s[1], s[1] + 2, s[2], s[2] + 4, s[3], s[3] + 3)
    case("dynamic_update_slice, number starts " .. name, function() return hl.dynamic_update_slice(x, u, st) end, upd, {x, u})
    case("dynamic_update_slice, array starts under jit " .. name, function()
      return hl.jit(function(a, b, s1, s2, s3) return hl.dynamic_update_slice(a, b, {s1, s2, s3}) end)(x, u, unpack(traced))
    end, upd, {x, u})
  end
  local ui = hl.array({{7, 7, 7}}, "int32")
  case("int32 dynamic_update_slice", function() return hl.dynamic_update_slice(xi, ui, {hl.array(4, "int32"), 5}) end,
       "(lambda o: (o.__setitem__((slice(3, 4), slice(3, 6)), b), o)[1])(a.copy())", {xi, ui})
  case("int32 dynamic_slice of the whole", function() return hl.dynamic_slice(xi, {3, 3}, {5, 6}) end, "a", {xi})
end)

describe("dynamic slices", function()
  local flat, numeric, close = diff_check.flat, diff_check.numeric, diff_check.close
  it("differentiate with traced starts", function()
    local x = np.rand({5, 4}, -2, 2, "float64")
    local u = np.rand({2, 3}, -2, 2, "float64")
    local w = np.rand({2, 3}, -1, 1, "float64")
    local w2 = np.rand({5, 4}, -1, 1, "float64")
    local s1, s2 = hl.array(4, "int32"), hl.array(-1, "int32")
    local f = function(a) return hl.sum(hl.dynamic_slice(a, {s1, s2}, {2, 3}) * w) end
    close(hl.grad(f)(x), numeric(f, x), 1e-6, "dynamic_slice")
    close(hl.jit(hl.grad(f))(x), flat(hl.grad(f)(x)), 1e-12, "dynamic_slice under jit")
    local g = function(a, b) return hl.sum(hl.dynamic_update_slice(a, b, {s1, s2}) * w2) end
    local gg = hl.grad(g, {1, 2})(x, u)
    close(gg[1], numeric(function(a) return g(a, u) end, x), 1e-6, "dynamic_update_slice dx")
    close(gg[2], numeric(function(b) return g(x, b) end, u), 1e-6, "dynamic_update_slice du")
  end)
  it("batch under vmap, starts mapped or not", function()
    local xs = np.rand({3, 6, 4}, -2, 2, "float32")
    local us = np.rand({3, 2, 2}, -2, 2, "float32")
    local s = hl.array({1, 4, 6}, "int32")
    local got = hl.vmap(function(x, i) return hl.dynamic_slice(x, {i, 2}, {2, 3}) end)(xs, s)
    local got2 = hl.vmap(function(x, u, i) return hl.dynamic_update_slice(x, u, {i, -1}) end)(xs, us, s)
    local got3 = hl.vmap(function(i) return hl.dynamic_slice(xs[1], {i, 1}, {3, 4}) end)(s)
    for b = 1, 3 do
      local i = s[b]:item()
      assert.same(hl.dynamic_slice(xs[b], {i, 2}, {2, 3}):totable(), got[b]:totable())
      assert.same(hl.dynamic_update_slice(xs[b], us[b], {i, -1}):totable(), got2[b]:totable())
      assert.same(hl.dynamic_slice(xs[1], {i, 1}, {3, 4}):totable(), got3[b]:totable())
    end
  end)
  it("raise errors that name the function and what to pass", function()
    local x = hl.ones({4, 3})
    assert.has_error(function() hl.dynamic_slice(x, {1}, {2, 2}) end,
      "halua: dynamic_slice: 1 starts for x of shape [4,3] (one per axis)")
    assert.has_error(function() hl.dynamic_slice(x, {1, 1}, {5, 2}) end,
      "halua: dynamic_slice: size 5 of axis 1 must be an integer in 0..4")
    assert.has_error(function() hl.dynamic_slice(x, {hl.array(1.5), 1}, {2, 2}) end,
      "halua: dynamic_slice: start of axis 1 must be an integer scalar, got float32[]")
    assert.has_error(function() hl.dynamic_slice(x, {1.5, 1}, {2, 2}) end,
      "halua: dynamic_slice: start 1.5 of axis 1 is not an integer")
    assert.has_error(function() hl.dynamic_update_slice(x, hl.ones({5, 1}), {1, 1}) end,
      "halua: dynamic_update_slice: update float32[5,1] is larger than x float32[4,3] along axis 1")
    assert.has_error(function() hl.dynamic_update_slice(x, hl.ones({2}), {1, 1}) end,
      "halua: dynamic_update_slice: update float32[2] must have x's rank (x is float32[4,3])")
  end)
end)

describe("the scatter primitive (core.scatter)", function()
  local core = hl.core
  local function err_of(f, ...)
    local ok, e = pcall(f, ...)
    assert.is_false(ok)
    return tostring(e)
  end
  it("combines in index order from the operand, along any axis, dropping outside indices", function()
    local x = hl.array({{1, 2, 3}, {4, 5, 6}})
    local u = hl.array({{10, 20, 30}, {40, 50, 60}})
    local i = hl.array({3, -1, 1}, "int32")   -- 0-based: 3 and -1 are outside an axis of 3
    assert.same({{1, 2, 3}, {4, 5, 6}}, core.scatter(x, u:reshape({2, 3}), hl.array({2, 5}, "int32"), 0, "add"):totable())
    assert.same({{1, 30, 3}, {4, 60, 6}}, core.scatter(x, u, i, 1, "set"):totable())
    assert.same({{1, 2, 3}, {4, 5, 6}}, core.scatter(x, hl.zeros({2, 0}), hl.zeros({0}, "int32"), 1, "mul"):totable())
    assert.same({{1, 2, -1}, {4, 5, 6}}, core.scatter(x, hl.array({{-1}, {9}}), hl.array({2}, "int64"), 1, "min"):totable())
    assert.same({{1, 2, 3}, {40, 50, 60}}, core.scatter(x, u, hl.array({1, 1}, "int32"), 0, "max"):totable())
    assert.same({{1, 2, 3}, {1600, 5000, 10800}}, core.scatter(x, u, hl.array({1, 1}, "int32"), 0, "mul"):totable())
  end)
  it("prints its axis, extent and mode in the IR", function()
    local text = tostring(hl.trace(function(a, b) return core.scatter(a, b, hl.array({0}, "int32"), 1, "mul") end,
                                   hl.ones({2, 3}), hl.ones({2, 1})))
    assert.truthy(text:find("scatter %0 %1 %2 axis=2 n=3 mode=mul", 1, true), text)
  end)
  it("checks its operands and says what is wrong", function()
    local x = hl.ones({2, 3})
    assert.truthy(err_of(core.scatter, x, hl.ones({2, 2}), hl.array({0}, "int32"), 1, "add"):find(
      "halua: scatter: updates [2,2] do not match operand [2,3] with indices [1] at axis 2", 1, true))
    assert.truthy(err_of(core.scatter, x, hl.ones({2, 1}), hl.array({0.5}), 1, "add"):find(
      "halua: scatter: indices must be integers, got float32", 1, true))
    assert.truthy(err_of(core.scatter, x, hl.ones({2, 1}, "float64"), hl.array({0}, "int32"), 1, "add"):find(
      "halua: scatter: updates of dtype float64 for an operand of dtype float32", 1, true))
    assert.truthy(err_of(core.scatter, x, hl.ones({2, 1}), hl.array({0}, "int32"), 1, "avg"):find(
      "halua: scatter: unknown mode 'avg' (add, set, mul, min or max)", 1, true))
    assert.truthy(err_of(core.scatter, x, hl.ones({2, 1}), hl.array({0}, "int32"), 2, "set"):find(
      "halua: scatter: axis 3 and indices [1] do not fit operand [2,3] and updates [2,1]", 1, true))
    assert.truthy(err_of(core.scatter, hl.array({true}), hl.array({true}), hl.array({0}, "int32"), 0, "mul"):find(
      "halua: scatter: cannot mul bool values", 1, true))
  end)
end)

describe("x:at(index arrays) with 2-byte floats", function()
  it("combines in float32 and rounds once, as the other ops of those dtypes do", function()
    for _, dt in ipairs {"float16", "bfloat16"} do
      local x = hl.array({1.5, 2.25, 3}, dt)
      local i = hl.array({1, 1, 3}, "int32")
      assert.same({1.5 * 9, 2.25, 9}, x:at(i):mul(3):totable())
      assert.same({7, 2.25, 7}, x:at(i):set(7):totable())
      assert.same({2.5, 2.25, 3}, x:at(i):max(2.5):totable())
      assert.equal(dt, x:at(i):add(1).dtype)
    end
  end)
end)
